"""Design folders (`designs/<name>/design.toml`): the model, the paths class and the loader."""

from closer.designs.model import Design, DesignPaths, list_designs, load_design

__all__ = ["Design", "DesignPaths", "list_designs", "load_design"]
