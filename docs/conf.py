"""Sphinx configuration of thrifty's documentation (``make docs``)."""

import os
import sys

sys.path.insert(0, os.path.abspath("../src"))

project = "thrifty"
author = "the thrifty developers"
copyright = "2026, the thrifty developers"

extensions = [
    "myst_nb",  # MyST markdown pages and notebooks executed during the build
    "sphinx.ext.autodoc",
    "numpydoc",  # the NumPy-style sections ("Parameters", "Examples") of the docstrings
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "myst-nb", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "jupyter_execute", ".jupyter_cache"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
nb_execution_mode = "force"  # the worked examples run at every build
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_merge_streams = True
autodoc_member_order = "bysource"
autodoc_default_options = {"undoc-members": False}
numpydoc_show_class_members = False  # members are listed where the API page asks for them
numpydoc_validation_checks: set = set()  # free-form docstrings: no section validation
html_theme = "pydata_sphinx_theme"
html_title = "thrifty"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
suppress_warnings = ["myst.header"]  # README headings start at level 2 inside the tour page
