"""Generic helpers that any part of the package imports: output folders and locks, process groups, CPU threads
and OpenMP defaults, the console's format, Hub access in offline mode, install hints, renamed options, the
measured-speed memory, and lazy package faces. Nothing here knows a model family."""
