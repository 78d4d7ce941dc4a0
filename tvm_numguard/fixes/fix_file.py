"""The fix as a file: what ``numguard fix`` writes and ``load`` reads back.

A fix document (kind ``fix``, ``report/fix-schema.json``) names the model and
configuration it was found for, and per culprit: its remedy, how many rewrites
the pass made (``rewrites``), how many the fix keeps (``kept``), the places it
undoes, each named in the user's model, and how it was verified, with the
cost table. ``load(path)`` gives a ``Fix``: what a user puts into their own
``tvm.compile``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from typing import Optional

import tvm

from ..base.errors import FixError
from ..base.numbers import to_json_number
from ..ir.narrow import FixPlan, narrowed
from ..ir.relax_ir import pristine
from ..report.schemas import header, validate
from ..report.sections import replay_command

FIX_SCHEMA = "fix-schema.json"


class UnverifiedFixWarning(UserWarning):
    """A fix applied that ``numguard fix`` did not verify when it wrote it (its document says why)."""


def fix_document(outcome, model, config, options, cost: Optional[list], path: str) -> dict:
    """The document of a ``finder.FixOutcome`` (``cost``: its BuildCost rows, or
    None) to be written at ``path``; ``options``: the user's (the framework set
    aside where the fix was found against TVM's reference build)."""
    verification = outcome.verification
    if outcome.imports is not None:
        options = dataclasses.replace(options, framework=False)
    return {
        **header("fix"),
        "model": {"path": model.source, "sha256": model.sha256, "main_hash": main_hash(model.mod)},
        "configuration": {**config.to_json(), "low": options.low, "high": options.high,
                          "ranges": {n: [r.low, r.high] for n, r in _ranges(outcome).items()},
                          "rtol": options.tolerance.rtol, "atol": options.tolerance.atol,
                          "seed": options.seed, "budget": options.budget},
        "verified": outcome.verified,
        "nothing_to_fix": outcome.nothing_to_fix,
        "reason": outcome.reason or None,
        "verification": None if verification is None else {
            "seed": verification.options.seed, "budget": verification.options.budget,
            "verdict": verification.verdict, "score": to_json_number(verification.comparison.score),
            "rounds": outcome.rounds, "range_warnings_reached": list(outcome.reached)},
        "culprits": [n.to_json() for n in outcome.narrowings.values()],
        "imports": imports_json(outcome.imports),
        "cost": None if cost is None else [row.to_json() for row in cost],
        "verify_command": verify_command(outcome, model, config, options, path) if outcome.verified else None,
    }


def imports_json(finding) -> Optional[dict]:
    """What the search met where TVM's import differs from the model's framework (a fix of
    the passes beside it is found and verified against TVM's reference build), or None."""
    if finding is None:
        return None
    judged, origin = finding.imports, finding.imports.origin
    return {"framework": judged.framework, "verdict": judged.verdict, "seed": finding.options.seed,
            "origin": origin.node if origin is not None else None,
            "score": None if origin is None else to_json_number(origin.score)}


def main_hash(mod: tvm.IRModule) -> str:
    """The structural hash of ``mod``'s main: the module a fix was made for, as
    ``Fix.instrument`` sees it at the first pass of a user's compile."""
    import tvm_ffi

    return str(tvm_ffi.structural_hash(mod["main"]))


def verify_command(outcome, model, config, options, path: str) -> str:
    """The ``numguard bisect`` line that verifies the fix at ``path`` on a seed
    of the user's own (the options' next one): the model, pipeline, range and
    tolerance the fix was found for."""
    fixed = dataclasses.replace(config, fix=outcome.plan or None, fix_file=os.path.abspath(path))
    return replay_command(model, fixed, dataclasses.replace(options, seed=options.seed + 1), outcome.first.ranges)


def _ranges(outcome) -> dict:
    return outcome.first.ranges if outcome.first is not None else {}


class Fix:
    """A fix document, loaded: ``plan`` (what builds apply), ``document`` (all of it).

    Use it in your own compile::

        fix = tvm_numguard.fixes.load("fix.json")
        with tvm.transform.PassContext(opt_level=3, instruments=[fix.instrument()]):
            ex = tvm.compile(mod, target)

    or ``fix.wrap(tvm.relax.transform.ToMixedPrecision())`` where you call the
    culprit pass yourself."""

    def __init__(self, document: dict, path: str = ""):
        self.document, self.path = document, path
        self.plan = FixPlan.from_json(document["culprits"])

    @property
    def verified(self) -> Optional[bool]:
        """Whether ``numguard fix`` verified this fix when it wrote it (None: the document does not say)."""
        return self.document.get("verified")

    def applicable(self) -> "Fix":
        """This fix, where it has a culprit to apply; a FixError saying so where it has none
        (``numguard fix`` writes such a file when no pass fix could be found: applying it would
        change nothing, silently)."""
        if not self.plan.culprits:
            why = self.document.get("reason") or "numguard fix found no pass to fix"
            raise FixError(f"the fix {self.path or ''} holds no culprit to apply (its document says: {why}): "
                           "nothing would change; see numguard fix's summary for what it found")
        return self

    def unverified_note(self) -> Optional[str]:
        """One line where numguard fix did not verify this fix (None where it did, or does not say)."""
        if self.verified is not False:
            return None
        why = self.document.get("reason") or "not said"
        return (f"the fix {self.path or ''} was NOT verified when numguard fix wrote it ({why}); "
                "it is applied as written")

    @property
    def model_sha256(self) -> str:
        """The sha256 of the model file this fix was made for ("" where the document has none)."""
        return (self.document.get("model") or {}).get("sha256") or ""

    def instrument(self):
        """A PassInstrument that applies the fix to one compilation (make one per
        compilation); it raises when the module lacks a place the fix names, and
        warns (``ForeignFixWarning``) when the module compiled is not the one the
        fix was made for, and (``UnverifiedFixWarning``) when numguard fix did not
        verify it; a fix with no culprit is refused (FixError)."""
        self.applicable()
        if note := self.unverified_note():
            warnings.warn(note, UnverifiedFixWarning, stacklevel=2)
        expected = (self.document.get("model") or {}).get("main_hash")
        return self.plan.instrument(strict=True, made_for=expected, name=self.path or "this fix")

    def pass_context(self, opt_level: int = 3, **kwargs) -> tvm.transform.PassContext:
        """A PassContext with the fix's instrument (before any of ``instruments`` given)."""
        instruments = [self.instrument(), *kwargs.pop("instruments", [])]
        return tvm.transform.PassContext(opt_level=opt_level, instruments=instruments, **kwargs)

    def wrap(self, culprit: tvm.transform.Pass) -> tvm.transform.Pass:
        """``culprit`` (the one narrowed pass of this fix) as a pass that undoes its rewrite at the fix's places."""
        narrow = [c for c in self.plan.culprits if c.remedy == "narrow"]
        if len(narrow) != 1:
            raise FixError(f"wrap needs a fix with one narrowed culprit, {self.path or 'this fix'} has {len(narrow)}")
        places = narrow[0].places

        @tvm.transform.module_pass(opt_level=0, name=f"Narrowed{culprit.info.name}")
        def wrapped(mod, _ctx):
            return narrowed(pristine(mod), culprit(pristine(mod)), places)
        return wrapped

    @property
    def culprits(self) -> list:
        return list(self.document["culprits"])


def load(path: str) -> Fix:
    """The fix document at ``path`` (``numguard fix``'s output); a file that is
    not one raises FixError saying what is wrong."""
    try:
        with open(path) as handle:
            document = json.load(handle)
    except OSError as err:
        raise FixError(f"cannot read the fix {path}: {err.strerror}") from None
    except ValueError as err:
        raise FixError(f"{path} is not JSON: {err}") from None
    if not isinstance(document, dict) or document.get("kind") != "fix":
        kind = document.get("kind") if isinstance(document, dict) else None
        raise FixError(f"{path} is not a numguard fix (its kind is {kind!r})")
    try:
        validate(document, FIX_SCHEMA)
    except Exception as err:  # jsonschema's ValidationError: one line saying where
        raise FixError(f"{path} breaks the fix schema: {getattr(err, 'message', err)}") from None
    return Fix(document, path)


def switch_off(*events: str) -> Fix:
    """A fix that switches the pass events ``events`` (ids as numguard names
    them: ``FoldConstant#0``, ``dlight.gpu.Reduction@fused_mean#0``) off, and
    nothing else: for the events ``disabled_pass`` cannot reach, one dlight rule
    on one kernel among them. Use it as a loaded fix::

        with tvm_numguard.fixes.switch_off("dlight.gpu.Reduction@fused_mean#0").pass_context(opt_level=3):
            executable = tvm.compile(mod, target)
    """
    if not events or not all(isinstance(e, str) and e for e in events):
        raise FixError("switch_off takes the ids of the pass events to switch off, at least one")
    return Fix({"kind": "fix", "culprits": [{"event": e, "remedy": "off", "places": []} for e in events]})
