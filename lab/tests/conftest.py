"""The lab's tests share the package tests' set-up (tests/conftest.py): the offline environment, the
data mirror and the CPU thread settings, and the fixtures they use."""

from tests.conftest import bert_tokenizer, load_script, mirror, no_checkout, one_thread, record  # noqa: F401  (fixtures)
