"""`closer matrix`: the protocol's experiment (designs x kinds x budgets x agents x trials) on Dask."""
