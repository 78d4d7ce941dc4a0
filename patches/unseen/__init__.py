"""Import defects and clean models the judge table does not hold, written by an
outside review of the import judge: new converter defects planted behind each
excuse (float16 precision, flips, two scales in one output, conditioning, a
wrong shape beside an excused node) and clean transformers and torch.nn blocks
in float32 and float16 (``cases.py``: name -> model, range, plant, expected).
``benchmarks/unseen_sweep.py`` runs them; ``tests/test_redteam_import.py``
keeps the cases it found numguard getting wrong."""
