"""A pass author's regression test: numguard's pytest plugin runs the pass under test
(``--numguard-pass``) over a corpus (``--numguard-corpus``), one test per model:

    .venv/bin/python -m pytest examples/pass_author --numguard-pass patches.fold_fp16:make_pass --numguard-corpus tiny

``patches.fold_fp16`` is a constant folder with a planted bug (it rounds what it folds
through float16): the test fails on the CNN, naming the event, the witness and the
command that replays it, and passes on the MLP, where the pass changes nothing."""


def test_my_pass(numguard_assert_safe, numguard_corpus, numguard_pass):
    numguard_assert_safe(numguard_pass, numguard_corpus)
