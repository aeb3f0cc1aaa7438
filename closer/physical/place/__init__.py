"""Global placement and legalization into the rows."""
