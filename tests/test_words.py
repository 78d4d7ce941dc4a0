"""One word, one meaning (docs/glossary.md): the uses issue 46 retired stay retired.

Each row is a pattern of a retired identifier or phrase, what says it now, and
the files that may still hold it (a deprecated alias that says so, a reader of
older documents). The package, the pytest plugin, the benchmarks and the docs
are read as text: a retired word that comes back fails here, naming the file
and line.
"""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (retired pattern, what says it now, files allowed to keep it)
RETIRED = [
    # "fix" is the narrow fix a fix file holds (FixPlan); the guard's fix= keyword fills a remedy
    (r"\bfix_at_import\b", "import_at_shapes", ("tvm_numguard/ir/model.py",)),
    (r"\bsettings\.fix\b|\bFIXES\b", "GuardSettings.remedy, narrow.plan.REMEDIES", ()),
    (r"precision fix|the fix for a precision", "the widening (keep float32)", ()),
    (r'"  fix       keep|"  fix       no pass to switch off', "'widen' and 'advice' lines", ()),
    (r"cannot fix the frontend", "cannot change the frontend", ()),
    # "check" is the range check only; other verdicts are judged, fixes verified, settings validated
    (r"\bCheckStart\b|\bdef _check\w*|\b_checked\(", "ReplayStart, _judge_call, _validate_...", ()),
    (r"\bnumguard_check\b", "numguard_assert_safe", ("numguard_pytest.py", "docs/glossary.md")),
    (r"\bcheck_(writable|span|bounds|command)\b", "ensure_writable, validate_span/bounds, verify_command", ()),
    (r"\bunchecked\b|not checked\b", "unanswered ('not answered'), or not judged", ()),
    (r"compiles? (was |not |not fully )?checked|compile\(s\) checked", "judged", ()),
    (r"\.checked\b|\"checked\"|framework\.checked", "ImportJudgement.verified_on", ()),
    # "origin" is where an error starts; where a value comes from in the model is its provenance
    (r"\borigin\w* = [\w.]*provenance\.get\(|for \w+, origin in [\w.]*provenance|for origin in [\w.]*provenance",
     "a Provenance is named provenance", ()),
    (r"\bpass_origin\b|prelude_calls\[\]\.origin", "pass_qualname, prelude_calls[].qualname", ()),
    # the reference is TVM's reference build only
    (r"\.get\(\"ref\"\)|\.get\(\"opt\"\)", "agreement.element_at (TVM's value and the framework's)", ()),
    (r"framework as the reference|model itself as the reference", "the framework, never the reference", ()),
    # one verdict spelling
    (r"[\"'`]agree[\"'`]", "agrees", ("benchmarks/node_sweep.py", "benchmarks/match_quality.py")),
    # a library message names a setting as the caller gave it: errors.named, never a hard-coded flag
    (r"(Error|UsageError)\(\s*f?\"--(shape|range|low|high|search|disable|fix-shapes|keep-float32)",
     "errors.named(parameter)", ("tvm_numguard/cli/",)),
    (r"fix it with --shape|give --low/--high|--search takes", "errors.named(parameter)", ()),
]


def _texts():
    roots = [("tvm_numguard", (".py", ".json")), ("benchmarks", (".py", ".sh", ".md")), ("docs", (".md",)),
             ("examples", (".py", ".md"))]
    for folder, suffixes in roots:
        for base, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(names):
                if name.endswith(suffixes):
                    yield os.path.relpath(os.path.join(base, name), ROOT)
    yield "numguard_pytest.py"
    yield "README.md"


def _hits(pattern: str, allowed: tuple) -> list:
    found = []
    for path in _texts():
        if any(path == a or (a.endswith("/") and path.startswith(a)) for a in allowed):
            continue
        for number, line in enumerate(open(os.path.join(ROOT, path), encoding="utf-8"), 1):
            if re.search(pattern, line):
                found.append(f"{path}:{number}: {line.strip()}")
    return found


@pytest.mark.parametrize("pattern, now, allowed", RETIRED, ids=[row[1] for row in RETIRED])
def test_a_retired_word_stays_retired(pattern, now, allowed):
    found = _hits(pattern, allowed)
    assert not found, f"retired (say {now} instead):\n" + "\n".join(found)


def test_the_check_finds_what_it_looks_for():
    """Each pattern matches the use it retires, so a test that passes is not one that reads nothing."""
    samples = ["load_model(p, fix_at_import=True)", "self.settings.fix", "the precision fix",
               'return [f"  fix       keep it', "numguard cannot fix the frontend", "class CheckStart:",
               "def numguard_check(request):", "check_writable(path)", 'verdict = "unchecked"',
               "compile not checked", "row.checked", "origin = model.provenance.get(name)",
               "pass_origin(p)", 'worst.get("ref")', "the framework as the reference side", 'verdict == "agree"',
               'raise ModelError(f"--shape {name}: bad")', "fix it with --shape x=N"]
    for (pattern, now, _), sample in zip(RETIRED, samples + [None] * len(RETIRED)):
        if sample is not None:
            assert re.search(pattern, sample), (now, sample)
    assert [line for line in _hits(r"\bnamed\(", ()) if "errors.py" in line]  # the scan reads the package
