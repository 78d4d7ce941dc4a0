"""The command line's spelling of every setting numguard says back.

One home: the CLI's option groups declare these flags, each settings object's
``to_args`` says itself back with them (the printed verify and replay lines),
and the CLI names them in a library error (``UsageError.said_with``). A key is
the field's name in the object that holds it (``Options``, ``CompileConfig``,
``Workers``, ``load_model``/``Model``).
"""

FLAG = {
    # Options
    "low": "--low", "high": "--high", "ranges": "--range", "rtol": "--rtol", "atol": "--atol",
    "search": "--search", "budget": "--budget", "seed": "--seed", "strategy": "--strategy",
    "oracle": "--no-oracle", "framework": "--no-framework",
    # CompileConfig
    "pipeline": "--pipeline", "tir_pipeline": "--tir-pipeline", "target": "--target",
    "opt_level": "--opt-level", "disable": "--disable", "fix": "--apply-fix",
    # Workers
    "jobs": "--jobs", "build_timeout": "--build-timeout", "max_memory": "--max-memory",
    # load_model / Model
    "shapes": "--shape", "fix_at_import": "--fix-shapes", "kept_float32": "--keep-float32",
}
