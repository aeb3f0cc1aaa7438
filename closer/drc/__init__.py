"""Rule -> KLayout DRC script tasks (the Rule2DRC family).

An agent turns a natural-language design rule into a KLayout DRC script; the script is scored by
running it with the real `klayout -b` on private labeled layouts. This package generates SKY130
problems in the Rule2DRC folder layout, imports Rule2DRC-format folders, evaluates candidate
scripts in the tool sandbox, estimates pass@N and runs Best-of-N selectors.
"""
