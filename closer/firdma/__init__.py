"""firdma helpers: the oracle runner (oracle), synthesis + STA (synth), the requirements map (requirements)."""
