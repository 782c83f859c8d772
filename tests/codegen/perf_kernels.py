import pyasc


def chain4(x, y):
    return pyasc.exp(x * y + 1.0) - y


def affine(x, w, b):
    return pyasc.relu(x * w + b)
