"""Clock tree synthesis: clock buffers by placement clusters."""
