"""Trajectories of metered tool calls: record model, append-only writer, tolerant reader,
measures (summarize), best-so-far plot and replay."""
