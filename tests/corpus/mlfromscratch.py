"""ML-From-Scratch style: activation and loss classes with __call__ and gradient, layers keeping
layer_input, optimizers that create their state on first use, small utility functions."""
from __future__ import annotations

import math

import numpy as np

from .harness import Call, case, f32

CASES: list = []
MS = "mlfromscratch"


class Sigmoid():
    def __call__(self, x):
        return 1 / (1 + np.exp(-x))

    def gradient(self, x):
        return self.__call__(x) * (1 - self.__call__(x))


class Softmax():
    def __call__(self, x):
        e_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e_x / np.sum(e_x, axis=-1, keepdims=True)

    def gradient(self, x):
        p = self.__call__(x)
        return p * (1 - p)


class TanH():
    def __call__(self, x):
        return 2 / (1 + np.exp(-2 * x)) - 1

    def gradient(self, x):
        return 1 - np.power(self.__call__(x), 2)


class ReLU():
    def __call__(self, x):
        return np.where(x >= 0, x, 0)

    def gradient(self, x):
        return np.where(x >= 0, 1, 0)


class LeakyReLU():
    def __init__(self, alpha=0.2):
        self.alpha = alpha

    def __call__(self, x):
        return np.where(x >= 0, x, self.alpha * x)

    def gradient(self, x):
        return np.where(x >= 0, 1, self.alpha)


class ELU():
    def __init__(self, alpha=0.1):
        self.alpha = alpha

    def __call__(self, x):
        return np.where(x >= 0.0, x, self.alpha * (np.exp(x) - 1))

    def gradient(self, x):
        return np.where(x >= 0.0, 1, self.__call__(x) + self.alpha)


class SELU():
    # Reference : https://arxiv.org/abs/1706.02515,
    def __init__(self):
        self.alpha = 1.6732632423543772848170429916717
        self.scale = 1.0507009873554804934193349852946

    def __call__(self, x):
        return self.scale * np.where(x >= 0.0, x, self.alpha * (np.exp(x) - 1))

    def gradient(self, x):
        return self.scale * np.where(x >= 0.0, 1, self.alpha * np.exp(x))


class SoftPlus():
    def __call__(self, x):
        return np.log(1 + np.exp(x))

    def gradient(self, x):
        return 1 / (1 + np.exp(-x))


class Loss(object):
    def loss(self, y_true, y_pred):
        return NotImplementedError()

    def gradient(self, y, y_pred):
        raise NotImplementedError()

    def acc(self, y, y_pred):
        return 0


class SquareLoss(Loss):
    def __init__(self):
        pass

    def loss(self, y, y_pred):
        return 0.5 * np.power((y - y_pred), 2)

    def gradient(self, y, y_pred):
        return -(y - y_pred)


def accuracy_score(y_true, y_pred):
    """ Compare y_true to y_pred and return the accuracy """
    accuracy = np.sum(y_true == y_pred, axis=0) / len(y_true)
    return accuracy


class CrossEntropy(Loss):
    def __init__(self):
        pass

    def loss(self, y, p):
        # Avoid division by zero
        p = np.clip(p, 1e-15, 1 - 1e-15)
        return - y * np.log(p) - (1 - y) * np.log(1 - p)

    def acc(self, y, p):
        return accuracy_score(np.argmax(y, axis=1), np.argmax(p, axis=1))

    def gradient(self, y, p):
        # Avoid division by zero
        p = np.clip(p, 1e-15, 1 - 1e-15)
        return - (y / p) + (1 - y) / (1 - p)


class StochasticGradientDescent():
    def __init__(self, learning_rate=0.01, momentum=0):
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.w_updt = None

    def update(self, w, grad_wrt_w):
        # If not initialized
        if self.w_updt is None:
            self.w_updt = np.zeros(np.shape(w))
        # Use momentum if set
        self.w_updt = self.momentum * self.w_updt + (1 - self.momentum) * grad_wrt_w
        # Move against the gradient to minimize loss
        return w - self.learning_rate * self.w_updt


class Adam():
    def __init__(self, learning_rate=0.001, b1=0.9, b2=0.999):
        self.learning_rate = learning_rate
        self.eps = 1e-8
        self.m = None
        self.v = None
        # Decay rates
        self.b1 = b1
        self.b2 = b2

    def update(self, w, grad_wrt_w):
        # If not initialized
        if self.m is None:
            self.m = np.zeros(np.shape(grad_wrt_w))
            self.v = np.zeros(np.shape(grad_wrt_w))

        self.m = self.b1 * self.m + (1 - self.b1) * grad_wrt_w
        self.v = self.b2 * self.v + (1 - self.b2) * np.power(grad_wrt_w, 2)

        m_hat = self.m / (1 - self.b1)
        v_hat = self.v / (1 - self.b2)

        self.w_updt = self.learning_rate * m_hat / (np.sqrt(v_hat) + self.eps)

        return w - self.w_updt


class RMSprop():
    def __init__(self, learning_rate=0.01, rho=0.9):
        self.learning_rate = learning_rate
        self.Eg = None  # Running average of the square gradients at w
        self.eps = 1e-8
        self.rho = rho

    def update(self, w, grad_wrt_w):
        # If not initialized
        if self.Eg is None:
            self.Eg = np.zeros(np.shape(grad_wrt_w))

        self.Eg = self.rho * self.Eg + (1 - self.rho) * np.power(grad_wrt_w, 2)

        # Divide the learning rate for a weight by a running average of the magnitudes of recent
        # gradients for that weight
        return w - self.learning_rate * grad_wrt_w / np.sqrt(self.Eg + self.eps)


class Dense():
    def __init__(self, rng, n_in, n_units):
        self.layer_input = None
        self.trainable = True
        limit = 1 / math.sqrt(n_in)
        self.W = rng.uniform(-limit, limit, (n_in, n_units)).astype(np.float32)
        self.w0 = np.zeros((1, n_units), np.float32)
        self.W_opt = StochasticGradientDescent(learning_rate=0.1, momentum=0.5)
        self.w0_opt = StochasticGradientDescent(learning_rate=0.1, momentum=0.5)

    def forward_pass(self, X, training=True):
        self.layer_input = X
        return X.dot(self.W) + self.w0

    def backward_pass(self, accum_grad):
        # Save weights used during forwards pass
        W = self.W

        if self.trainable:
            # Calculate gradient w.r.t layer weights
            grad_w = self.layer_input.T.dot(accum_grad)
            grad_w0 = np.sum(accum_grad, axis=0, keepdims=True)

            # Update the layer weights
            self.W = self.W_opt.update(self.W, grad_w)
            self.w0 = self.w0_opt.update(self.w0, grad_w0)

        # Return accumulated gradient for next layer
        # Calculated based on the weights used during the forward pass
        accum_grad = accum_grad.dot(W.T)
        return accum_grad


activation_functions = {
    'relu': ReLU,
    'sigmoid': Sigmoid,
    'selu': SELU,
    'elu': ELU,
    'softmax': Softmax,
    'leaky_relu': LeakyReLU,
    'tanh': TanH,
    'softplus': SoftPlus
}


class Activation():
    def __init__(self, name):
        self.activation_name = name
        self.activation_func = activation_functions[name]()
        self.trainable = True

    def layer_name(self):
        return "Activation (%s)" % (self.activation_func.__class__.__name__)

    def forward_pass(self, X, training=True):
        self.layer_input = X
        return self.activation_func(X)

    def backward_pass(self, accum_grad):
        return accum_grad * self.activation_func.gradient(self.layer_input)


class BatchNormalization():
    def __init__(self, momentum=0.99):
        self.momentum = momentum
        self.trainable = True
        self.eps = 0.01
        self.running_mean = None
        self.running_var = None

    def initialize(self, shape):
        # Initialize the parameters
        self.gamma = np.ones(shape)
        self.beta = np.zeros(shape)

    def forward_pass(self, X, training=True):
        # Initialize running mean and variance if first run
        if self.running_mean is None:
            self.running_mean = np.mean(X, axis=0)
            self.running_var = np.var(X, axis=0)

        if training and self.trainable:
            mean = np.mean(X, axis=0)
            var = np.var(X, axis=0)
            self.running_mean = self.momentum * self.running_mean + (1 - self.momentum) * mean
            self.running_var = self.momentum * self.running_var + (1 - self.momentum) * var
        else:
            mean = self.running_mean
            var = self.running_var

        # Statistics saved for backward pass
        self.X_centered = X - mean
        self.stddev_inv = 1 / np.sqrt(var + self.eps)

        X_norm = self.X_centered * self.stddev_inv
        output = self.gamma * X_norm + self.beta

        return output


def euclidean_distance(x1, x2):
    """ Calculates the l2 distance between two vectors """
    distance = 0
    # Squared distance between each coordinate
    for i in range(len(x1)):
        distance += pow((x1[i] - x2[i]), 2)
    return math.sqrt(distance)


def normalize(X, axis=-1, order=2):
    """ Normalize the dataset X """
    l2 = np.atleast_1d(np.linalg.norm(X, order, axis))
    l2[l2 == 0] = 1
    return X / np.expand_dims(l2, axis)


def standardize(X):
    """ Standardize the dataset X """
    X_std = X
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    for col in range(np.shape(X)[1]):
        if std[col]:
            X_std[:, col] = (X_std[:, col] - mean[col]) / std[col]
    # X_std = (X - X.mean(axis=0)) / X.std(axis=0)
    return X_std


def to_categorical(x, n_col=None):
    """ One-hot encoding of nominal values """
    if not n_col:
        n_col = np.amax(x) + 1
    one_hot = np.zeros((x.shape[0], n_col))
    one_hot[np.arange(x.shape[0]), x] = 1
    return one_hot


def mean_squared_error(y_true, y_pred):
    """ Returns the mean squared error between y_true and y_pred """
    mse = np.mean(np.power(y_true - y_pred, 2))
    return mse


def calculate_variance(X):
    """ Return the variance of the features in dataset X """
    mean = np.ones(np.shape(X)) * X.mean(0)
    n_samples = np.shape(X)[0]
    variance = (1 / n_samples) * np.diag((X - mean).T.dot(X - mean))
    return variance


def calculate_covariance_matrix(X, Y=None):
    """ Calculate the covariance matrix for the dataset X """
    if Y is None:
        Y = X
    n_samples = np.shape(X)[0]
    covariance_matrix = (1 / (n_samples - 1)) * (X - X.mean(axis=0)).T.dot(Y - Y.mean(axis=0))
    return np.array(covariance_matrix, dtype=float)


def calculate_entropy(y):
    """ Calculate the entropy of label array y """
    log2 = lambda x: math.log(x) / math.log(2)  # noqa: E731
    unique_labels = np.unique(y)
    entropy = 0
    for label in unique_labels:
        count = len(y[y == label])
        p = count / len(y)
        entropy += -p * log2(p)
    return entropy


class LogisticRegressionPredict:
    def __init__(self, rng, n):
        self.param = f32(rng, n)
        self.sigmoid = Sigmoid()

    def predict(self, X):
        y_pred = np.round(self.sigmoid(X.dot(self.param))).astype(int)
        return y_pred


class l2_regularization():
    """ Regularization for Ridge Regression """
    def __init__(self, alpha):
        self.alpha = alpha

    def __call__(self, w):
        return self.alpha * 0.5 * w.T.dot(w)

    def grad(self, w):
        return self.alpha * w


class l1_l2_regularization():
    """ Regularization for Elastic Net Regression """
    def __init__(self, alpha, l1_ratio=0.5):
        self.alpha = alpha
        self.l1_ratio = l1_ratio

    def __call__(self, w):
        l1_contr = self.l1_ratio * np.linalg.norm(w)
        l2_contr = (1 - self.l1_ratio) * 0.5 * w.T.dot(w)
        return self.alpha * (l1_contr + l2_contr)

    def grad(self, w):
        l1_contr = self.l1_ratio * np.sign(w)
        l2_contr = (1 - self.l1_ratio) * w
        return self.alpha * (l1_contr + l2_contr)


# ---- cases ---------------------------------------------------------------------------------------------


def _activation(cls):
    def make(rng):
        act = cls()

        def step(x):
            return act(x), act.gradient(x)
        return Call(step, (f32(rng, 4, 6),))
    make.__name__ = "act_" + cls.__name__.lower()
    return make


for _cls in (Sigmoid, Softmax, TanH, ReLU, LeakyReLU, ELU, SELU, SoftPlus):
    case(MS, CASES)(_activation(_cls))


@case(MS, CASES)
def square_loss(rng):
    loss = SquareLoss()

    def step(y, p):
        return loss.loss(y, p), loss.gradient(y, p)
    return Call(step, (f32(rng, 4, 3), f32(rng, 4, 3)))


@case(MS, CASES)
def cross_entropy(rng):
    loss = CrossEntropy()
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 5)]
    p = rng.dirichlet(np.ones(3), 5).astype(np.float32)

    def step(y, p):
        return loss.loss(y, p), loss.gradient(y, p), loss.acc(y, p)
    return Call(step, (y, p))


@case(MS, CASES)
def sgd_first_update(rng):
    opt = StochasticGradientDescent(learning_rate=0.1, momentum=0.9)
    return Call(opt.update, (f32(rng, 4, 3), f32(rng, 4, 3)), (opt,))


@case(MS, CASES)
def adam_first_update(rng):
    opt = Adam()
    return Call(opt.update, (f32(rng, 4, 3), f32(rng, 4, 3)), (opt,))


@case(MS, CASES)
def rmsprop_first_update(rng):
    opt = RMSprop()
    return Call(opt.update, (f32(rng, 4, 3), f32(rng, 4, 3)), (opt,))


@case(MS, CASES)
def dense_forward_pass(rng):
    layer = Dense(rng, 4, 3)
    return Call(layer.forward_pass, (f32(rng, 5, 4),), (layer,))


@case(MS, CASES)
def dense_backward_pass(rng):
    layer = Dense(rng, 4, 3)

    def step(X, grad):
        layer.forward_pass(X)
        return layer.backward_pass(grad)
    return Call(step, (f32(rng, 5, 4), f32(rng, 5, 3)), (layer,))


@case(MS, CASES)
def activation_layer(rng):
    layer = Activation("leaky_relu")

    def step(X, grad):
        out = layer.forward_pass(X)
        return out, layer.backward_pass(grad)
    return Call(step, (f32(rng, 5, 4), f32(rng, 5, 4)), (layer,))


@case(MS, CASES)
def batchnorm_first_pass(rng):
    bn = BatchNormalization()
    bn.initialize((4,))
    return Call(bn.forward_pass, (f32(rng, 6, 4),), (bn,))


@case(MS, CASES)
def batchnorm_inference_pass(rng):
    bn = BatchNormalization()
    bn.initialize((4,))
    bn.running_mean = f32(rng, 4)
    bn.running_var = np.abs(f32(rng, 4)) + 0.5

    def step(X):
        return bn.forward_pass(X, training=False)
    return Call(step, (f32(rng, 6, 4),), (bn,))


@case(MS, CASES)
def euclidean(rng):
    return Call(euclidean_distance, (f32(rng, 5), f32(rng, 5)))


@case(MS, CASES)
def normalize_rows(rng):
    return Call(normalize, (f32(rng, 4, 5),))


@case(MS, CASES)
def standardize_columns(rng):
    return Call(standardize, (f32(rng, 6, 3),))


@case(MS, CASES)
def categorical(rng):
    def step(x):
        return to_categorical(x, 4)
    return Call(step, (rng.integers(0, 4, size=6).astype(np.int32),))


@case(MS, CASES)
def mse(rng):
    return Call(mean_squared_error, (f32(rng, 6), f32(rng, 6)))


@case(MS, CASES)
def variance(rng):
    return Call(calculate_variance, (f32(rng, 6, 3),))


@case(MS, CASES)
def covariance(rng):
    return Call(calculate_covariance_matrix, (f32(rng, 6, 3),))


@case(MS, CASES)
def entropy(rng):
    return Call(calculate_entropy, (rng.integers(0, 3, size=8).astype(np.int32),))


@case(MS, CASES)
def logistic_predict(rng):
    model = LogisticRegressionPredict(rng, 4)
    return Call(model.predict, (f32(rng, 5, 4),))


@case(MS, CASES)
def ridge_regularization(rng):
    reg = l2_regularization(0.5)

    def step(w):
        return reg(w), reg.grad(w)
    return Call(step, (f32(rng, 5),))


@case(MS, CASES)
def elastic_net_regularization(rng):
    reg = l1_l2_regularization(0.5)

    def step(w):
        return reg(w), reg.grad(w)
    return Call(step, (f32(rng, 5),))
