"""A machine-learning textbook's network (Nielsen-style network.py / network2.py): column-vector activations,
lists of biases and weights, backprop filling lists of gradients, cost classes with static methods."""
from __future__ import annotations

import numpy as np

from .harness import Call, case, f32

CASES: list = []
TB = "textbook"


def sigmoid(z):
    """The sigmoid function."""
    return 1.0 / (1.0 + np.exp(-z))


def sigmoid_prime(z):
    """Derivative of the sigmoid function."""
    return sigmoid(z) * (1 - sigmoid(z))


class Network(object):
    def __init__(self, rng, sizes):
        self.num_layers = len(sizes)
        self.sizes = sizes
        self.biases = [f32(rng, y, 1) for y in sizes[1:]]
        self.weights = [f32(rng, y, x) for x, y in zip(sizes[:-1], sizes[1:])]

    def feedforward(self, a):
        """Return the output of the network if ``a`` is input."""
        for b, w in zip(self.biases, self.weights):
            a = sigmoid(np.dot(w, a) + b)
        return a

    def backprop(self, x, y):
        """Return a tuple ``(nabla_b, nabla_w)`` representing the gradient for the cost function C_x."""
        nabla_b = [np.zeros(b.shape) for b in self.biases]
        nabla_w = [np.zeros(w.shape) for w in self.weights]
        # feedforward
        activation = x
        activations = [x]  # list to store all the activations, layer by layer
        zs = []  # list to store all the z vectors, layer by layer
        for b, w in zip(self.biases, self.weights):
            z = np.dot(w, activation) + b
            zs.append(z)
            activation = sigmoid(z)
            activations.append(activation)
        # backward pass
        delta = self.cost_derivative(activations[-1], y) * sigmoid_prime(zs[-1])
        nabla_b[-1] = delta
        nabla_w[-1] = np.dot(delta, activations[-2].transpose())
        for layer in range(2, self.num_layers):
            z = zs[-layer]
            sp = sigmoid_prime(z)
            delta = np.dot(self.weights[-layer + 1].transpose(), delta) * sp
            nabla_b[-layer] = delta
            nabla_w[-layer] = np.dot(delta, activations[-layer - 1].transpose())
        return (nabla_b, nabla_w)

    def update_mini_batch(self, xs, ys, eta):
        nabla_b = [np.zeros(b.shape) for b in self.biases]
        nabla_w = [np.zeros(w.shape) for w in self.weights]
        for x, y in zip(xs, ys):
            delta_nabla_b, delta_nabla_w = self.backprop(x, y)
            nabla_b = [nb + dnb for nb, dnb in zip(nabla_b, delta_nabla_b)]
            nabla_w = [nw + dnw for nw, dnw in zip(nabla_w, delta_nabla_w)]
        self.weights = [w - (eta / len(xs)) * nw for w, nw in zip(self.weights, nabla_w)]
        self.biases = [b - (eta / len(xs)) * nb for b, nb in zip(self.biases, nabla_b)]

    def evaluate(self, xs, ys):
        test_results = [(np.argmax(self.feedforward(x)), y) for (x, y) in zip(xs, ys)]
        return sum(int(x == y) for (x, y) in test_results)

    def cost_derivative(self, output_activations, y):
        """Return the vector of partial derivatives \\partial C_x / \\partial a for the output activations."""
        return (output_activations - y)


class QuadraticCost(object):
    @staticmethod
    def fn(a, y):
        """Return the cost associated with an output ``a`` and desired output ``y``."""
        return 0.5 * np.linalg.norm(a - y) ** 2

    @staticmethod
    def delta(z, a, y):
        """Return the error delta from the output layer."""
        return (a - y) * sigmoid_prime(z)


class CrossEntropyCost(object):
    @staticmethod
    def fn(a, y):
        """Return the cost associated with an output ``a`` and desired output ``y``."""
        return np.sum(np.nan_to_num(-y * np.log(a) - (1 - y) * np.log(1 - a)))

    @staticmethod
    def delta(z, a, y):
        """Return the error delta from the output layer."""
        return (a - y)


def vectorized_result(j):
    """Return a 10-dimensional unit vector with a 1.0 in the jth position."""
    e = np.zeros((10, 1))
    e[j] = 1.0
    return e


def total_cost(net, xs, ys, lmbda, cost=CrossEntropyCost):
    c = 0.0
    for x, y in zip(xs, ys):
        a = net.feedforward(x)
        c += cost.fn(a, y) / len(xs)
    c += 0.5 * (lmbda / len(xs)) * sum(np.linalg.norm(w) ** 2 for w in net.weights)
    return c


# ---- cases ---------------------------------------------------------------------------------------------


@case(TB, CASES)
def feedforward(rng):
    net = Network(rng, [4, 5, 3])
    return Call(net.feedforward, (f32(rng, 4, 1),))


@case(TB, CASES)
def backprop(rng):
    net = Network(rng, [4, 5, 3])
    return Call(net.backprop, (f32(rng, 4, 1), f32(rng, 3, 1)))


@case(TB, CASES)
def mini_batch_update(rng):
    net = Network(rng, [4, 5, 3])
    xs = [f32(rng, 4, 1) for _ in range(3)]
    ys = [f32(rng, 3, 1) for _ in range(3)]

    def step(xs, ys):
        net.update_mini_batch(xs, ys, 0.5)
        return net.weights[0]
    return Call(step, (xs, ys), (net,))


@case(TB, CASES)
def evaluate(rng):
    net = Network(rng, [4, 5, 3])
    xs = f32(rng, 6, 4, 1)
    ys = rng.integers(0, 3, 6).astype(np.int32)

    def step(xs, ys):
        return np.array(net.evaluate(xs, ys))
    return Call(step, (xs, ys))


@case(TB, CASES)
def quadratic_cost(rng):
    def step(z, a, y):
        return QuadraticCost.fn(a, y), QuadraticCost.delta(z, a, y)
    return Call(step, (f32(rng, 3, 1), rng.random((3, 1)).astype(np.float32), rng.random((3, 1)).astype(np.float32)))


@case(TB, CASES)
def cross_entropy_cost(rng):
    def step(z, a, y):
        return CrossEntropyCost.fn(a, y), CrossEntropyCost.delta(z, a, y)
    return Call(step, (f32(rng, 3, 1), rng.random((3, 1)).astype(np.float32), (rng.random((3, 1)) > 0.5).astype(np.float32)))


@case(TB, CASES)
def one_hot_target(rng):
    def step(x):
        return vectorized_result(3) * x
    return Call(step, (f32(rng, 10, 1),))


@case(TB, CASES)
def regularized_total_cost(rng):
    net = Network(rng, [4, 5, 3])
    xs = [f32(rng, 4, 1) for _ in range(2)]
    ys = [rng.random((3, 1)).astype(np.float32) for _ in range(2)]

    def step(xs, ys):
        return total_cost(net, xs, ys, 0.1)
    return Call(step, (xs, ys))
