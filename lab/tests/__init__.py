"""The lab's tests (a package, so that its conftest does not take the name `conftest` from tests/)."""
