# The front end has one exception family (python/taot/errors.py): every exception class in the
# package derives from TaotError (what the user sees) or Problem (what a caller catches), and the
# TaotErrors are all defined in errors.py, where a reader finds every error the driver can print.
# (compile.engine.Interrupted is a KeyboardInterrupt, Ctrl-C, on purpose: not an Exception.)
import importlib
import inspect
import pkgutil

from conftest import REPO  # noqa: F401 (puts python/ on sys.path)
import taot
from taot import errors
from taot.errors import Problem, TaotError


def exception_classes():
    """(module name, class) for each Exception subclass defined in a module of python/taot."""
    found = []
    for module_info in pkgutil.walk_packages(taot.__path__, "taot."):
        if module_info.name.endswith("__main__"):  # running it is running the CLI
            continue
        module = importlib.import_module(module_info.name)
        for _, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, Exception) and value.__module__ == module.__name__:
                found.append((module.__name__, value))
    return found


def test_every_exception_class_of_the_front_end_derives_from_the_family():
    classes = exception_classes()
    assert len(classes) > 20, "the walk finds the package's exception classes"
    strays = [f"{module}.{cls.__qualname__}" for module, cls in classes if not issubclass(cls, (TaotError, Problem))]
    assert not strays, f"derive these from errors.TaotError or errors.Problem: {strays}"


def test_every_error_the_user_sees_is_defined_in_errors_py():
    elsewhere = [f"{module}.{cls.__qualname__}" for module, cls in exception_classes()
                 if issubclass(cls, TaotError) and module != errors.__name__]
    assert not elsewhere, f"move these TaotError subclasses to python/taot/errors.py: {elsewhere}"


def test_a_problem_phrased_as_expected_and_got_keeps_both():
    problem = Problem(expected="a Python file that imports cleanly", got="k.py:3: NameError")
    assert str(problem) == "expected a Python file that imports cleanly, got k.py:3: NameError"
    assert (problem.expected, problem.got) == ("a Python file that imports cleanly", "k.py:3: NameError")
    assert str(Problem("its source cannot be found")) == "its source cannot be found"
