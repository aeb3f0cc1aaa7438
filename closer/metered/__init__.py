"""The metered front end (`closer-tool`): budgeted, recorded tool calls inside a task workspace."""
