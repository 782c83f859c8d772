"""scikit-learn-MLP style: in-place activations (`out=`), a forward pass over coefs_/intercepts_ lists on an
estimator object, losses with scipy.special.xlogy, derivatives written into `delta` in place."""
from __future__ import annotations

import numpy as np
from scipy.special import expit as logistic_sigmoid
from scipy.special import xlogy

from .harness import Call, case, f32

CASES: list = []
SK = "sklearn"


def inplace_identity(X):
    """Simply leave the input array unchanged."""
    # Nothing to do


def inplace_logistic(X):
    """Compute the logistic function inplace."""
    logistic_sigmoid(X, out=X)


def inplace_tanh(X):
    """Compute the hyperbolic tan function inplace."""
    np.tanh(X, out=X)


def inplace_relu(X):
    """Compute the rectified linear unit function inplace."""
    np.maximum(X, 0, out=X)


def inplace_softmax(X):
    """Compute the K-way softmax function inplace."""
    tmp = X - X.max(axis=1)[:, np.newaxis]
    np.exp(tmp, out=X)
    X /= X.sum(axis=1)[:, np.newaxis]


ACTIVATIONS = {
    "identity": inplace_identity,
    "tanh": inplace_tanh,
    "logistic": inplace_logistic,
    "relu": inplace_relu,
    "softmax": inplace_softmax,
}


def inplace_identity_derivative(Z, delta):
    """Apply the derivative of the identity function: do nothing."""
    # Nothing to do


def inplace_logistic_derivative(Z, delta):
    """Apply the derivative of the logistic sigmoid function."""
    delta *= Z
    delta *= 1 - Z


def inplace_tanh_derivative(Z, delta):
    """Apply the derivative of the hyperbolic tanh function."""
    delta *= 1 - Z**2


def inplace_relu_derivative(Z, delta):
    """Apply the derivative of the relu function."""
    delta[Z == 0] = 0


DERIVATIVES = {
    "identity": inplace_identity_derivative,
    "tanh": inplace_tanh_derivative,
    "logistic": inplace_logistic_derivative,
    "relu": inplace_relu_derivative,
}


def squared_loss(y_true, y_pred, sample_weight=None):
    """Compute the squared loss for regression."""
    return (np.average((y_true - y_pred) ** 2, weights=sample_weight, axis=0).mean() / 2)


def log_loss(y_true, y_prob, sample_weight=None):
    """Compute Logistic loss for classification."""
    eps = np.finfo(y_prob.dtype).eps
    y_prob = np.clip(y_prob, eps, 1 - eps)
    if y_prob.shape[1] == 1:
        y_prob = np.append(1 - y_prob, y_prob, axis=1)

    if y_true.shape[1] == 1:
        y_true = np.append(1 - y_true, y_true, axis=1)

    return -np.average(xlogy(y_true, y_prob), weights=sample_weight, axis=0).sum()


def binary_log_loss(y_true, y_prob, sample_weight=None):
    """Compute binary logistic loss for classification."""
    eps = np.finfo(y_prob.dtype).eps
    y_prob = np.clip(y_prob, eps, 1 - eps)
    return -np.average(xlogy(y_true, y_prob) + xlogy(1 - y_true, 1 - y_prob), weights=sample_weight, axis=0).sum()


def safe_sparse_dot(a, b, *, dense_output=False):
    """Dot product that handle the sparse matrix case correctly."""
    if a.ndim > 2 or b.ndim > 2:
        ret = np.dot(a, b)
    else:
        ret = a @ b
    return ret


class MLP:
    """The fitted attributes an MLPClassifier/Regressor keeps, and its forward pass."""

    def __init__(self, rng, sizes, activation="relu", out_activation="softmax"):
        self.coefs_ = [f32(rng, m, n, scale=0.3) for m, n in zip(sizes[:-1], sizes[1:])]
        self.intercepts_ = [f32(rng, n, scale=0.1) for n in sizes[1:]]
        self.n_layers_ = len(sizes)
        self.activation = activation
        self.out_activation_ = out_activation

    def _forward_pass_fast(self, X, check_input=True):
        """Predict using the trained model."""
        # Initialize first layer
        activation = X

        # Forward propagate
        hidden_activation = ACTIVATIONS[self.activation]
        for i in range(self.n_layers_ - 1):
            activation = safe_sparse_dot(activation, self.coefs_[i])
            activation += self.intercepts_[i]
            if i != self.n_layers_ - 2:
                hidden_activation(activation)
        output_activation = ACTIVATIONS[self.out_activation_]
        output_activation(activation)

        return activation

    def _forward_pass(self, activations):
        """Perform a forward pass on the network by computing the values of the neurons in the hidden layers
        and the output layer."""
        hidden_activation = ACTIVATIONS[self.activation]
        # Iterate over the hidden layers
        for i in range(self.n_layers_ - 1):
            activations[i + 1] = safe_sparse_dot(activations[i], self.coefs_[i])
            activations[i + 1] += self.intercepts_[i]

            # For the hidden layers
            if (i + 1) != (self.n_layers_ - 1):
                hidden_activation(activations[i + 1])

        # For the last layer
        output_activation = ACTIVATIONS[self.out_activation_]
        output_activation(activations[i + 1])

        return activations

    def _compute_loss_grad(self, layer, n_samples, activations, deltas, coef_grads, intercept_grads):
        """Compute the gradient of loss with respect to coefs and intercept for specified layer."""
        coef_grads[layer] = safe_sparse_dot(activations[layer].T, deltas[layer])
        coef_grads[layer] += 0.0001 * self.coefs_[layer]
        coef_grads[layer] /= n_samples

        intercept_grads[layer] = np.mean(deltas[layer], 0)

    def predict_proba(self, X):
        y_pred = self._forward_pass_fast(X)
        if y_pred.ndim == 1:
            return np.vstack([1 - y_pred, y_pred]).T
        return y_pred

    def predict(self, X):
        y_pred = self._forward_pass_fast(X)
        return np.argmax(y_pred, axis=1)


def _act(fn):
    def make(rng):
        return Call(fn, (f32(rng, 4, 6),))
    make.__name__ = fn.__name__
    return make


for _fn in (inplace_logistic, inplace_tanh, inplace_relu, inplace_softmax):
    case(SK, CASES)(_act(_fn))


def _deriv(fn):
    def make(rng):
        z = np.abs(f32(rng, 4, 6)) * (rng.random((4, 6)) > 0.3)
        return Call(fn, (z.astype(np.float32), f32(rng, 4, 6)))
    make.__name__ = fn.__name__
    return make


for _fn in (inplace_logistic_derivative, inplace_tanh_derivative, inplace_relu_derivative):
    case(SK, CASES)(_deriv(_fn))


@case(SK, CASES)
def squared_loss_case(rng):
    return Call(squared_loss, (f32(rng, 6, 2), f32(rng, 6, 2)))


@case(SK, CASES)
def log_loss_case(rng):
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 6)]
    p = rng.dirichlet(np.ones(3), 6).astype(np.float32)
    return Call(log_loss, (y, p))


@case(SK, CASES)
def log_loss_binary_column(rng):
    y = (rng.random((6, 1)) > 0.5).astype(np.float32)
    p = rng.random((6, 1)).astype(np.float32)
    return Call(log_loss, (y, p))


@case(SK, CASES)
def binary_log_loss_case(rng):
    y = (rng.random((6, 2)) > 0.5).astype(np.float32)
    return Call(binary_log_loss, (y, rng.random((6, 2)).astype(np.float32)))


@case(SK, CASES)
def forward_fast_relu(rng):
    m = MLP(rng, [6, 8, 3])
    return Call(m._forward_pass_fast, (f32(rng, 4, 6),), (m,))


@case(SK, CASES)
def forward_fast_tanh_logistic(rng):
    m = MLP(rng, [6, 8, 8, 1], activation="tanh", out_activation="logistic")
    return Call(m._forward_pass_fast, (f32(rng, 4, 6),), (m,))


@case(SK, CASES)
def forward_fast_identity(rng):
    m = MLP(rng, [6, 5, 2], activation="logistic", out_activation="identity")
    return Call(m._forward_pass_fast, (f32(rng, 4, 6),), (m,))


@case(SK, CASES)
def forward_pass_activations(rng):
    m = MLP(rng, [6, 8, 3])
    acts = [f32(rng, 4, 6), np.zeros((4, 8), np.float32), np.zeros((4, 3), np.float32)]
    return Call(m._forward_pass, (acts,), (m,))


@case(SK, CASES)
def compute_loss_grad(rng):
    m = MLP(rng, [6, 8, 3])
    acts = [f32(rng, 4, 6), f32(rng, 4, 8), f32(rng, 4, 3)]
    deltas = [f32(rng, 4, 8), f32(rng, 4, 3)]
    coef_grads = [np.zeros((6, 8), np.float32), np.zeros((8, 3), np.float32)]
    intercept_grads = [np.zeros(8, np.float32), np.zeros(3, np.float32)]

    def kernel(acts, deltas, coef_grads, intercept_grads):
        m._compute_loss_grad(1, 4, acts, deltas, coef_grads, intercept_grads)
        return coef_grads[1], intercept_grads[1]

    return Call(kernel, (acts, deltas, coef_grads, intercept_grads), (m,))


@case(SK, CASES)
def predict_proba_binary(rng):
    m = MLP(rng, [6, 8, 1], out_activation="logistic")

    def kernel(X):
        y = m._forward_pass_fast(X).ravel()
        return np.vstack([1 - y, y]).T

    return Call(kernel, (f32(rng, 4, 6),), (m,))


@case(SK, CASES)
def predict_labels(rng):
    m = MLP(rng, [6, 8, 3])
    return Call(m.predict, (f32(rng, 4, 6),), (m,))
