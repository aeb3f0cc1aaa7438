"""The classic backend's nodes run without SiliconCompiler: the same tool commands, inputs and
node folders as SiliconCompiler's tasks, without its schema, scheduler and forked node processes."""
