"""The flow layer: a SiliconCompiler flowgraph per run (lint, elaborate, synthesis, STA/power),
content-keyed node reuse, and ORFS-named metrics (`1_synth.json`, `1_synth_sta.json`,
`metadata.json`)."""
