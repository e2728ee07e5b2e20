"""The shipped catalogs are parsed with PyYAML's C parser where it is built (issue 19: the
pure-Python parser cost a cold ``twin run`` tens of milliseconds); the data must be what
the pure-Python safe loader gives, value for value and type for type."""

from importlib import resources

import pytest
import yaml

from twin.catalog import load_catalog
from twin.reliability import classes


@pytest.mark.parametrize("name", ["nodes.yaml", "failures.yaml"])
def test_c_parser_gives_the_pure_python_data(name):
    text = resources.files("twin.catalog").joinpath(name).read_text(encoding="utf-8")
    pure = yaml.load(text, Loader=yaml.SafeLoader)
    fast = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert fast == pure
    assert repr(fast) == repr(pure)                  # the same types (int vs float, dates, None)


def test_catalogs_load_the_pure_python_data():
    text = resources.files("twin.catalog").joinpath("nodes.yaml").read_text(encoding="utf-8")
    assert load_catalog() == type(load_catalog()).model_validate(yaml.load(text, Loader=yaml.SafeLoader))
    path = str(classes._catalog_path())
    with open(path, encoding="utf-8") as fh:
        assert classes._load_yaml(path) == yaml.load(fh, Loader=yaml.SafeLoader)
