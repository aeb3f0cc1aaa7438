"""Stage-paired tasks: generator, pristine evaluator, local runner, Harbor export (docs/tasks.md)."""
