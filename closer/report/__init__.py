"""Reports over saved run records (`closer report`)."""
