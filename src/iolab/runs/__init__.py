"""The run lifecycle, once for every driver (`iolab run`, `iolab ab`, and the Python API):
preflight → claim → interrupts → finish, and resume (`runs.lifecycle`); a plan's blocks run
into a run (`runs.plan_run`); the run's typed metadata (`runs.meta`); an import of result
files as one run (`runs.imports`).

Nothing is imported here, so reading `runs.meta` does not load the lab."""
