"""nnfs-book style: layer objects whose forward/backward return nothing and keep inputs and outputs as
attributes, losses as classes, optimizers that update layer attributes in place, hasattr to make caches."""
from __future__ import annotations

import numpy as np

from .harness import Call, case, f32

CASES: list = []
NN = "nnfs"


class Layer_Dense:
    def __init__(self, rng, n_inputs, n_neurons, weight_regularizer_l2=0, bias_regularizer_l2=0):
        self.weights = 0.1 * f32(rng, n_inputs, n_neurons)
        self.biases = np.zeros((1, n_neurons), np.float32)
        self.weight_regularizer_l2 = weight_regularizer_l2
        self.bias_regularizer_l2 = bias_regularizer_l2

    def forward(self, inputs, training=False):
        self.inputs = inputs
        self.output = np.dot(inputs, self.weights) + self.biases

    def backward(self, dvalues):
        self.dweights = np.dot(self.inputs.T, dvalues)
        self.dbiases = np.sum(dvalues, axis=0, keepdims=True)
        if self.weight_regularizer_l2 > 0:
            self.dweights += 2 * self.weight_regularizer_l2 * self.weights
        if self.bias_regularizer_l2 > 0:
            self.dbiases += 2 * self.bias_regularizer_l2 * self.biases
        self.dinputs = np.dot(dvalues, self.weights.T)


class Layer_Dropout:
    def __init__(self, rate):
        self.rate = 1 - rate

    def forward(self, inputs, training):
        self.inputs = inputs
        if not training:
            self.output = inputs.copy()
            return
        self.binary_mask = np.random.binomial(1, self.rate, size=inputs.shape) / self.rate
        self.output = inputs * self.binary_mask


class Activation_ReLU:
    def forward(self, inputs, training=False):
        self.inputs = inputs
        self.output = np.maximum(0, inputs)

    def backward(self, dvalues):
        self.dinputs = dvalues.copy()
        self.dinputs[self.inputs <= 0] = 0

    def predictions(self, outputs):
        return outputs


class Activation_Softmax:
    def forward(self, inputs, training=False):
        self.inputs = inputs
        exp_values = np.exp(inputs - np.max(inputs, axis=1, keepdims=True))
        probabilities = exp_values / np.sum(exp_values, axis=1, keepdims=True)
        self.output = probabilities

    def backward(self, dvalues):
        self.dinputs = np.empty_like(dvalues)
        for index, (single_output, single_dvalues) in enumerate(zip(self.output, dvalues)):
            single_output = single_output.reshape(-1, 1)
            jacobian_matrix = np.diagflat(single_output) - np.dot(single_output, single_output.T)
            self.dinputs[index] = np.dot(jacobian_matrix, single_dvalues)

    def predictions(self, outputs):
        return np.argmax(outputs, axis=1)


class Activation_Sigmoid:
    def forward(self, inputs, training=False):
        self.inputs = inputs
        self.output = 1 / (1 + np.exp(-inputs))

    def backward(self, dvalues):
        self.dinputs = dvalues * (1 - self.output) * self.output

    def predictions(self, outputs):
        return (outputs > 0.5) * 1


class Activation_Linear:
    def forward(self, inputs, training=False):
        self.inputs = inputs
        self.output = inputs

    def backward(self, dvalues):
        self.dinputs = dvalues.copy()


class Loss:
    def regularization_loss(self, layer):
        regularization_loss = 0
        if layer.weight_regularizer_l2 > 0:
            regularization_loss += layer.weight_regularizer_l2 * np.sum(layer.weights * layer.weights)
        if layer.bias_regularizer_l2 > 0:
            regularization_loss += layer.bias_regularizer_l2 * np.sum(layer.biases * layer.biases)
        return regularization_loss

    def calculate(self, output, y):
        sample_losses = self.forward(output, y)
        data_loss = np.mean(sample_losses)
        return data_loss


class Loss_CategoricalCrossentropy(Loss):
    def forward(self, y_pred, y_true):
        samples = len(y_pred)
        y_pred_clipped = np.clip(y_pred, 1e-7, 1 - 1e-7)
        if len(y_true.shape) == 1:
            correct_confidences = y_pred_clipped[range(samples), y_true]
        elif len(y_true.shape) == 2:
            correct_confidences = np.sum(y_pred_clipped * y_true, axis=1)
        negative_log_likelihoods = -np.log(correct_confidences)
        return negative_log_likelihoods

    def backward(self, dvalues, y_true):
        samples = len(dvalues)
        labels = len(dvalues[0])
        if len(y_true.shape) == 1:
            y_true = np.eye(labels)[y_true]
        self.dinputs = -y_true / dvalues
        self.dinputs = self.dinputs / samples


class Activation_Softmax_Loss_CategoricalCrossentropy:
    def __init__(self):
        self.activation = Activation_Softmax()
        self.loss = Loss_CategoricalCrossentropy()

    def forward(self, inputs, y_true):
        self.activation.forward(inputs)
        self.output = self.activation.output
        return self.loss.calculate(self.output, y_true)

    def backward(self, dvalues, y_true):
        samples = len(dvalues)
        if len(y_true.shape) == 2:
            y_true = np.argmax(y_true, axis=1)
        self.dinputs = dvalues.copy()
        self.dinputs[range(samples), y_true] -= 1
        self.dinputs = self.dinputs / samples


class Loss_BinaryCrossentropy(Loss):
    def forward(self, y_pred, y_true):
        y_pred_clipped = np.clip(y_pred, 1e-7, 1 - 1e-7)
        sample_losses = -(y_true * np.log(y_pred_clipped) + (1 - y_true) * np.log(1 - y_pred_clipped))
        sample_losses = np.mean(sample_losses, axis=-1)
        return sample_losses

    def backward(self, dvalues, y_true):
        samples = len(dvalues)
        outputs = len(dvalues[0])
        clipped_dvalues = np.clip(dvalues, 1e-7, 1 - 1e-7)
        self.dinputs = -(y_true / clipped_dvalues - (1 - y_true) / (1 - clipped_dvalues)) / outputs
        self.dinputs = self.dinputs / samples


class Loss_MeanSquaredError(Loss):
    def forward(self, y_pred, y_true):
        sample_losses = np.mean((y_true - y_pred) ** 2, axis=-1)
        return sample_losses

    def backward(self, dvalues, y_true):
        samples = len(dvalues)
        outputs = len(dvalues[0])
        self.dinputs = -2 * (y_true - dvalues) / outputs
        self.dinputs = self.dinputs / samples


class Optimizer_SGD:
    def __init__(self, learning_rate=1., decay=0., momentum=0.):
        self.learning_rate = learning_rate
        self.current_learning_rate = learning_rate
        self.decay = decay
        self.iterations = 0
        self.momentum = momentum

    def pre_update_params(self):
        if self.decay:
            self.current_learning_rate = self.learning_rate * (1. / (1. + self.decay * self.iterations))

    def update_params(self, layer):
        if self.momentum:
            if not hasattr(layer, "weight_momentums"):
                layer.weight_momentums = np.zeros_like(layer.weights)
                layer.bias_momentums = np.zeros_like(layer.biases)
            weight_updates = self.momentum * layer.weight_momentums - self.current_learning_rate * layer.dweights
            layer.weight_momentums = weight_updates
            bias_updates = self.momentum * layer.bias_momentums - self.current_learning_rate * layer.dbiases
            layer.bias_momentums = bias_updates
        else:
            weight_updates = -self.current_learning_rate * layer.dweights
            bias_updates = -self.current_learning_rate * layer.dbiases
        layer.weights += weight_updates
        layer.biases += bias_updates

    def post_update_params(self):
        self.iterations += 1


class Optimizer_Adam:
    def __init__(self, learning_rate=0.001, decay=0., epsilon=1e-7, beta_1=0.9, beta_2=0.999):
        self.learning_rate = learning_rate
        self.current_learning_rate = learning_rate
        self.decay = decay
        self.iterations = 0
        self.epsilon = epsilon
        self.beta_1 = beta_1
        self.beta_2 = beta_2

    def update_params(self, layer):
        if not hasattr(layer, "weight_cache"):
            layer.weight_momentums = np.zeros_like(layer.weights)
            layer.weight_cache = np.zeros_like(layer.weights)
            layer.bias_momentums = np.zeros_like(layer.biases)
            layer.bias_cache = np.zeros_like(layer.biases)
        layer.weight_momentums = self.beta_1 * layer.weight_momentums + (1 - self.beta_1) * layer.dweights
        layer.bias_momentums = self.beta_1 * layer.bias_momentums + (1 - self.beta_1) * layer.dbiases
        weight_momentums_corrected = layer.weight_momentums / (1 - self.beta_1 ** (self.iterations + 1))
        bias_momentums_corrected = layer.bias_momentums / (1 - self.beta_1 ** (self.iterations + 1))
        layer.weight_cache = self.beta_2 * layer.weight_cache + (1 - self.beta_2) * layer.dweights ** 2
        layer.bias_cache = self.beta_2 * layer.bias_cache + (1 - self.beta_2) * layer.dbiases ** 2
        weight_cache_corrected = layer.weight_cache / (1 - self.beta_2 ** (self.iterations + 1))
        bias_cache_corrected = layer.bias_cache / (1 - self.beta_2 ** (self.iterations + 1))
        layer.weights += -self.current_learning_rate * weight_momentums_corrected / \
            (np.sqrt(weight_cache_corrected) + self.epsilon)
        layer.biases += -self.current_learning_rate * bias_momentums_corrected / \
            (np.sqrt(bias_cache_corrected) + self.epsilon)


class Accuracy_Categorical:
    def calculate(self, predictions, y):
        comparisons = self.compare(predictions, y)
        accuracy = np.mean(comparisons)
        return accuracy

    def compare(self, predictions, y):
        if len(y.shape) == 2:
            y = np.argmax(y, axis=1)
        return predictions == y


# ---- cases ---------------------------------------------------------------------------------------------


def _labels(rng, n, c):
    return rng.integers(0, c, size=n).astype(np.int32)


@case(NN, CASES)
def dense_forward(rng):
    layer = Layer_Dense(rng, 4, 5)

    def step(X):
        layer.forward(X)
        return layer.output
    return Call(step, (f32(rng, 3, 4),), (layer,))


@case(NN, CASES)
def dense_forward_returns_nothing(rng):
    layer = Layer_Dense(rng, 4, 5)
    return Call(layer.forward, (f32(rng, 3, 4),), (layer,))


@case(NN, CASES)
def dense_relu_forward(rng):
    dense1, act1 = Layer_Dense(rng, 4, 6), Activation_ReLU()

    def step(X):
        dense1.forward(X)
        act1.forward(dense1.output)
        return act1.output
    return Call(step, (f32(rng, 3, 4),), (dense1, act1))


@case(NN, CASES)
def relu_backward(rng):
    act = Activation_ReLU()

    def step(X, dvalues):
        act.forward(X)
        act.backward(dvalues)
        return act.dinputs
    return Call(step, (f32(rng, 3, 4), f32(rng, 3, 4)), (act,))


@case(NN, CASES)
def softmax_forward(rng):
    act = Activation_Softmax()

    def step(X):
        act.forward(X)
        return act.output
    return Call(step, (f32(rng, 3, 4),), (act,))


@case(NN, CASES)
def softmax_backward_jacobian(rng):
    act = Activation_Softmax()

    def step(X, dvalues):
        act.forward(X)
        act.backward(dvalues)
        return act.dinputs
    return Call(step, (f32(rng, 3, 4), f32(rng, 3, 4)), (act,))


@case(NN, CASES)
def sigmoid_forward_backward(rng):
    act = Activation_Sigmoid()

    def step(X, dvalues):
        act.forward(X)
        act.backward(dvalues)
        return act.output, act.dinputs, act.predictions(act.output)
    return Call(step, (f32(rng, 3, 4), f32(rng, 3, 4)), (act,))


@case(NN, CASES)
def cce_sparse(rng):
    loss = Loss_CategoricalCrossentropy()
    p = rng.dirichlet(np.ones(4), 5).astype(np.float32)
    return Call(loss.calculate, (p, _labels(rng, 5, 4)))


@case(NN, CASES)
def cce_one_hot(rng):
    loss = Loss_CategoricalCrossentropy()
    p = rng.dirichlet(np.ones(4), 5).astype(np.float32)
    return Call(loss.calculate, (p, np.eye(4, dtype=np.float32)[_labels(rng, 5, 4)]))


@case(NN, CASES)
def cce_backward_sparse(rng):
    loss = Loss_CategoricalCrossentropy()
    p = rng.dirichlet(np.ones(4), 5).astype(np.float32)

    def step(dvalues, y):
        loss.backward(dvalues, y)
        return loss.dinputs
    return Call(step, (p, _labels(rng, 5, 4)), (loss,))


@case(NN, CASES)
def softmax_cce_combined(rng):
    combo = Activation_Softmax_Loss_CategoricalCrossentropy()

    def step(X, y):
        loss = combo.forward(X, y)
        combo.backward(combo.output, y)
        return loss, combo.dinputs
    return Call(step, (f32(rng, 5, 4), _labels(rng, 5, 4)), (combo,))


@case(NN, CASES)
def binary_ce(rng):
    loss = Loss_BinaryCrossentropy()
    y = (rng.random((5, 2)) > 0.5).astype(np.float32)

    def step(p, y):
        value = loss.calculate(p, y)
        loss.backward(p, y)
        return value, loss.dinputs
    return Call(step, (rng.random((5, 2)).astype(np.float32), y), (loss,))


@case(NN, CASES)
def mse_loss(rng):
    loss = Loss_MeanSquaredError()

    def step(p, y):
        value = loss.calculate(p, y)
        loss.backward(p, y)
        return value, loss.dinputs
    return Call(step, (f32(rng, 5, 2), f32(rng, 5, 2)), (loss,))


@case(NN, CASES)
def regularization(rng):
    layer = Layer_Dense(rng, 4, 5, weight_regularizer_l2=5e-4, bias_regularizer_l2=5e-4)
    loss = Loss_CategoricalCrossentropy()

    def step(X):
        layer.forward(X)
        return loss.regularization_loss(layer)
    return Call(step, (f32(rng, 3, 4),), (layer,))


@case(NN, CASES)
def dense_backward(rng):
    layer = Layer_Dense(rng, 4, 5, weight_regularizer_l2=5e-4)

    def step(X, dvalues):
        layer.forward(X)
        layer.backward(dvalues)
        return layer.dinputs
    return Call(step, (f32(rng, 3, 4), f32(rng, 3, 5)), (layer,))


@case(NN, CASES)
def sgd_update(rng):
    layer = Layer_Dense(rng, 4, 5)
    opt = Optimizer_SGD(learning_rate=0.5)

    def step(X, dvalues):
        layer.forward(X)
        layer.backward(dvalues)
        opt.pre_update_params()
        opt.update_params(layer)
        opt.post_update_params()
        return layer.weights
    return Call(step, (f32(rng, 3, 4), f32(rng, 3, 5)), (layer, opt))


@case(NN, CASES)
def sgd_momentum_update(rng):
    layer = Layer_Dense(rng, 4, 5)
    opt = Optimizer_SGD(learning_rate=0.5, decay=1e-3, momentum=0.9)

    def step(X, dvalues):
        layer.forward(X)
        layer.backward(dvalues)
        opt.pre_update_params()
        opt.update_params(layer)
        opt.post_update_params()
        return layer.weights
    return Call(step, (f32(rng, 3, 4), f32(rng, 3, 5)), (layer, opt))


@case(NN, CASES)
def adam_update(rng):
    layer = Layer_Dense(rng, 4, 5)
    opt = Optimizer_Adam(learning_rate=0.01)

    def step(X, dvalues):
        layer.forward(X)
        layer.backward(dvalues)
        opt.update_params(layer)
        return layer.weights, layer.biases
    return Call(step, (f32(rng, 3, 4), f32(rng, 3, 5)), (layer, opt))


@case(NN, CASES)
def dropout_inference(rng):
    drop = Layer_Dropout(0.1)

    def step(X):
        drop.forward(X, training=False)
        return drop.output
    return Call(step, (f32(rng, 3, 4),), (drop,))


@case(NN, CASES)
def accuracy(rng):
    acc = Accuracy_Categorical()
    act = Activation_Softmax()

    def step(X, y):
        act.forward(X)
        return acc.calculate(act.predictions(act.output), y)
    return Call(step, (f32(rng, 6, 4), _labels(rng, 6, 4)), (act,))


@case(NN, CASES)
def full_training_step(rng):
    dense1, act1 = Layer_Dense(rng, 2, 8), Activation_ReLU()
    dense2 = Layer_Dense(rng, 8, 3)
    loss_act = Activation_Softmax_Loss_CategoricalCrossentropy()
    opt = Optimizer_Adam(learning_rate=0.05, decay=5e-7)

    def step(X, y):
        dense1.forward(X)
        act1.forward(dense1.output)
        dense2.forward(act1.output)
        loss = loss_act.forward(dense2.output, y)
        loss_act.backward(loss_act.output, y)
        dense2.backward(loss_act.dinputs)
        act1.backward(dense2.dinputs)
        dense1.backward(act1.dinputs)
        opt.update_params(dense1)
        opt.update_params(dense2)
        return loss
    return Call(step, (f32(rng, 6, 2), _labels(rng, 6, 3)), (dense1, dense2))


@case(NN, CASES)
def linear_activation(rng):
    act = Activation_Linear()

    def step(X, d):
        act.forward(X)
        act.backward(d)
        return act.output + act.dinputs
    return Call(step, (f32(rng, 3, 4), f32(rng, 3, 4)), (act,))
