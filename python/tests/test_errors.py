"""tandem::Error subclasses become Python exceptions with the same message."""
import pytest

import tandem


def test_error_classes_subclass_builtins():
    assert issubclass(tandem.TypeError, TypeError) and issubclass(tandem.TypeError, tandem.Error)
    assert issubclass(tandem.ValueError, ValueError)
    assert issubclass(tandem.IndexError, IndexError)
    assert issubclass(tandem.ShapeError, RuntimeError)
    assert issubclass(tandem.RuntimeError, RuntimeError)
    assert issubclass(tandem.NotImplementedError, NotImplementedError)
    assert tandem.Error is not Exception


def test_shape_error_message():
    with pytest.raises(tandem.ShapeError) as e:
        tandem.ones(2, 3) + tandem.ones(4)
    assert str(e.value).startswith("[add]")
    assert isinstance(e.value, RuntimeError)


def test_matmul_shape_error():
    with pytest.raises(RuntimeError) as e:
        tandem.ones(2, 3) @ tandem.ones(2, 3)
    assert "matmul" in str(e.value) or "mm" in str(e.value)


def test_index_error_for_dim():
    with pytest.raises(tandem.IndexError) as e:
        tandem.ones(2, 3).sum(5)
    assert str(e.value).startswith("[sum]")
    with pytest.raises(IndexError):
        tandem.ones(2).size(3)


def test_type_error_for_dtype():
    with pytest.raises(tandem.TypeError) as e:
        tandem.tensor([1, 2]).requires_grad_()
    assert isinstance(e.value, TypeError) or isinstance(e.value, ValueError)


def test_value_error():
    with pytest.raises(ValueError):
        tandem.ones(2, 2).item()
    with pytest.raises(tandem.ValueError):
        tandem.get_op("no_such_op")


def test_errors_leave_the_interpreter_usable():
    for _ in range(3):
        with pytest.raises(tandem.Error):
            tandem.ones(2) + tandem.ones(3)
    assert (tandem.ones(2) + 1).tolist() == [2.0, 2.0]
