"""Builds and runs: one model's session (every build of it, memoized), the
builds a bisection tries (``attempts``), the runs on each input (``runs``),
the worker processes they may run in (``workers``), and the capture of every
kernel's output (``capture``). Nothing is imported here: the command line
reads the area's light modules (``observation``) without loading TVM."""
