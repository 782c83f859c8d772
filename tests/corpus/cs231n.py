"""CS231n-assignment style layers: forward/backward pairs returning (out, cache), losses with integer-array
indexing, batchnorm with a bn_param dict, naive convolution and pooling loops, RNN/LSTM steps."""
from __future__ import annotations

import numpy as np

from .harness import Call, case, f32

CASES: list = []
CS = "cs231n"


def affine_forward(x, w, b):
    out = None
    N = x.shape[0]
    x_row = x.reshape(N, -1)
    out = x_row.dot(w) + b
    cache = (x, w, b)
    return out, cache


def affine_backward(dout, cache):
    x, w, b = cache
    dx, dw, db = None, None, None
    dx = dout.dot(w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T.dot(dout)
    db = np.sum(dout, axis=0)
    return dx, dw, db


def relu_forward(x):
    out = None
    out = np.maximum(0, x)
    cache = x
    return out, cache


def relu_backward(dout, cache):
    dx, x = None, cache
    dx = dout.copy()
    dx[x <= 0] = 0
    return dx


def affine_relu_forward(x, w, b):
    a, fc_cache = affine_forward(x, w, b)
    out, relu_cache = relu_forward(a)
    cache = (fc_cache, relu_cache)
    return out, cache


def affine_relu_backward(dout, cache):
    fc_cache, relu_cache = cache
    da = relu_backward(dout, relu_cache)
    dx, dw, db = affine_backward(da, fc_cache)
    return dx, dw, db


def svm_loss(x, y):
    N = x.shape[0]
    correct_class_scores = x[np.arange(N), y]
    margins = np.maximum(0, x - correct_class_scores[:, np.newaxis] + 1.0)
    margins[np.arange(N), y] = 0
    loss = np.sum(margins) / N
    num_pos = np.sum(margins > 0, axis=1)
    dx = np.zeros_like(x)
    dx[margins > 0] = 1
    dx[np.arange(N), y] -= num_pos
    dx /= N
    return loss, dx


def softmax_loss(x, y):
    shifted_logits = x - np.max(x, axis=1, keepdims=True)
    Z = np.sum(np.exp(shifted_logits), axis=1, keepdims=True)
    log_probs = shifted_logits - np.log(Z)
    probs = np.exp(log_probs)
    N = x.shape[0]
    loss = -np.sum(log_probs[np.arange(N), y]) / N
    dx = probs.copy()
    dx[np.arange(N), y] -= 1
    dx /= N
    return loss, dx


def batchnorm_forward(x, gamma, beta, bn_param):
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)

    N, D = x.shape
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))

    out, cache = None, None
    if mode == "train":
        sample_mean = np.mean(x, axis=0)
        sample_var = np.var(x, axis=0)
        x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
        out = gamma * x_hat + beta
        cache = (x, x_hat, sample_mean, sample_var, gamma, beta, eps)
        running_mean = momentum * running_mean + (1 - momentum) * sample_mean
        running_var = momentum * running_var + (1 - momentum) * sample_var
    elif mode == "test":
        x_hat = (x - running_mean) / np.sqrt(running_var + eps)
        out = gamma * x_hat + beta
    else:
        raise ValueError('Invalid forward batchnorm mode "%s"' % mode)

    # Store the updated running means back into bn_param
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var

    return out, cache


def batchnorm_backward_alt(dout, cache):
    x, x_hat, mean, var, gamma, beta, eps = cache
    N = x.shape[0]
    dgamma = np.sum(dout * x_hat, axis=0)
    dbeta = np.sum(dout, axis=0)
    dx_hat = dout * gamma
    dx = (1.0 / N) / np.sqrt(var + eps) * (N * dx_hat - np.sum(dx_hat, axis=0) - x_hat * np.sum(dx_hat * x_hat, axis=0))
    return dx, dgamma, dbeta


def layernorm_forward(x, gamma, beta, ln_param):
    eps = ln_param.get("eps", 1e-5)
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    x_hat = (x - mu) / np.sqrt(var + eps)
    out = gamma * x_hat + beta
    cache = (x_hat, gamma, var + eps)
    return out, cache


def dropout_forward_test(x, dropout_param):
    p, mode = dropout_param["p"], dropout_param["mode"]
    mask = None
    out = None
    if mode == "train":
        mask = (np.random.rand(*x.shape) < p) / p
        out = x * mask
    elif mode == "test":
        out = x
    cache = (dropout_param, mask)
    out = out.astype(x.dtype, copy=False)
    return out, cache


def conv_forward_naive(x, w, b, conv_param):
    out = None
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    stride, pad = conv_param["stride"], conv_param["pad"]
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), mode="constant", constant_values=0)
    out = np.zeros((N, F, H_out, W_out))
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    h_start = i * stride
                    w_start = j * stride
                    window = x_pad[n, :, h_start:h_start + HH, w_start:w_start + WW]
                    out[n, f, i, j] = np.sum(window * w[f]) + b[f]
    cache = (x, w, b, conv_param)
    return out, cache


def max_pool_forward_naive(x, pool_param):
    out = None
    N, C, H, W = x.shape
    ph, pw, stride = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    H_out = 1 + (H - ph) // stride
    W_out = 1 + (W - pw) // stride
    out = np.zeros((N, C, H_out, W_out))
    for i in range(H_out):
        for j in range(W_out):
            window = x[:, :, i * stride:i * stride + ph, j * stride:j * stride + pw]
            out[:, :, i, j] = np.max(window, axis=(2, 3))
    cache = (x, pool_param)
    return out, cache


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    next_h, cache = None, None
    next_h = np.tanh(x.dot(Wx) + prev_h.dot(Wh) + b)
    cache = (x, prev_h, Wx, Wh, next_h)
    return next_h, cache


def rnn_step_backward(dnext_h, cache):
    x, prev_h, Wx, Wh, next_h = cache
    dtanh = dnext_h * (1 - next_h ** 2)
    dx = dtanh.dot(Wx.T)
    dprev_h = dtanh.dot(Wh.T)
    dWx = x.T.dot(dtanh)
    dWh = prev_h.T.dot(dtanh)
    db = np.sum(dtanh, axis=0)
    return dx, dprev_h, dWx, dWh, db


def rnn_forward(x, h0, Wx, Wh, b):
    h, cache = None, None
    N, T, D = x.shape
    H = h0.shape[1]
    h = np.zeros((N, T, H))
    prev_h = h0
    cache = []
    for t in range(T):
        next_h, cache_t = rnn_step_forward(x[:, t, :], prev_h, Wx, Wh, b)
        h[:, t, :] = next_h
        prev_h = next_h
        cache.append(cache_t)
    return h, cache


def word_embedding_forward(x, W):
    out, cache = None, None
    out = W[x]
    cache = (x, W)
    return out, cache


def word_embedding_backward(dout, cache):
    dW = None
    x, W = cache
    dW = np.zeros_like(W)
    np.add.at(dW, x, dout)
    return dW


def sigmoid(x):
    """A numerically stable version of the logistic sigmoid function."""
    pos_mask = x >= 0
    neg_mask = x < 0
    z = np.zeros_like(x)
    z[pos_mask] = np.exp(-x[pos_mask])
    z[neg_mask] = np.exp(x[neg_mask])
    top = np.ones_like(x)
    top[neg_mask] = z[neg_mask]
    return top / (1 + z)


def lstm_step_forward(x, prev_h, prev_c, Wx, Wh, b):
    next_h, next_c, cache = None, None, None
    H = prev_h.shape[1]
    a = x.dot(Wx) + prev_h.dot(Wh) + b
    i = sigmoid(a[:, :H])
    f = sigmoid(a[:, H:2 * H])
    o = sigmoid(a[:, 2 * H:3 * H])
    g = np.tanh(a[:, 3 * H:])
    next_c = f * prev_c + i * g
    next_h = o * np.tanh(next_c)
    cache = (x, prev_h, prev_c, Wx, Wh, a, i, f, o, g, next_c, next_h)
    return next_h, next_c, cache


def temporal_affine_forward(x, w, b):
    N, T, D = x.shape
    M = b.shape[0]
    out = x.reshape(N * T, D).dot(w).reshape(N, T, M) + b
    cache = x, w, b, out
    return out, cache


def temporal_softmax_loss(x, y, mask, verbose=False):
    N, T, V = x.shape
    x_flat = x.reshape(N * T, V)
    y_flat = y.reshape(N * T)
    mask_flat = mask.reshape(N * T)
    probs = np.exp(x_flat - np.max(x_flat, axis=1, keepdims=True))
    probs /= np.sum(probs, axis=1, keepdims=True)
    loss = -np.sum(mask_flat * np.log(probs[np.arange(N * T), y_flat])) / N
    dx_flat = probs.copy()
    dx_flat[np.arange(N * T), y_flat] -= 1
    dx_flat /= N
    dx_flat *= mask_flat[:, None]
    if verbose:
        print("dx_flat: ", dx_flat.shape)
    dx = dx_flat.reshape(N, T, V)
    return loss, dx


def sgd_momentum(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("momentum", 0.9)
    v = config.get("velocity", np.zeros_like(w))
    next_w = None
    v = config["momentum"] * v - config["learning_rate"] * dw
    next_w = w + v
    config["velocity"] = v
    return next_w, config


def adam(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-3)
    config.setdefault("beta1", 0.9)
    config.setdefault("beta2", 0.999)
    config.setdefault("epsilon", 1e-8)
    config.setdefault("m", np.zeros_like(w))
    config.setdefault("v", np.zeros_like(w))
    config.setdefault("t", 0)
    next_w = None
    config["t"] += 1
    config["m"] = config["beta1"] * config["m"] + (1 - config["beta1"]) * dw
    mt = config["m"] / (1 - config["beta1"] ** config["t"])
    config["v"] = config["beta2"] * config["v"] + (1 - config["beta2"]) * (dw ** 2)
    vt = config["v"] / (1 - config["beta2"] ** config["t"])
    next_w = w - config["learning_rate"] * mt / (np.sqrt(vt) + config["epsilon"])
    return next_w, config


def rmsprop(w, dw, config):
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("decay_rate", 0.99)
    config.setdefault("epsilon", 1e-8)
    config.setdefault("cache", np.zeros_like(w))
    next_w = None
    config["cache"] = config["decay_rate"] * config["cache"] + (1 - config["decay_rate"]) * (dw ** 2)
    next_w = w - config["learning_rate"] * dw / (np.sqrt(config["cache"]) + config["epsilon"])
    return next_w, config


def linear_svm_vectorized(W, X, y, reg):
    loss = 0.0
    dW = np.zeros(W.shape)
    num_train = X.shape[0]
    scores = X.dot(W)
    correct = scores[range(num_train), y].reshape(-1, 1)
    margins = np.maximum(0, scores - correct + 1)
    margins[range(num_train), y] = 0
    loss = np.sum(margins) / num_train + reg * np.sum(W * W)
    binary = margins
    binary[margins > 0] = 1
    row_sum = np.sum(binary, axis=1)
    binary[range(num_train), y] = -row_sum
    dW = X.T.dot(binary) / num_train + 2 * reg * W
    return loss, dW


def softmax_loss_vectorized(W, X, y, reg):
    num_train = X.shape[0]
    scores = X.dot(W)
    scores -= np.max(scores, axis=1, keepdims=True)
    probs = np.exp(scores) / np.sum(np.exp(scores), axis=1, keepdims=True)
    loss = np.sum(-np.log(probs[np.arange(num_train), y])) / num_train + reg * np.sum(W * W)
    dscores = probs
    dscores[np.arange(num_train), y] -= 1
    dW = X.T.dot(dscores) / num_train + 2 * reg * W
    return loss, dW


def knn_compute_distances_no_loops(X, X_train):
    dists = np.sqrt(np.sum(X ** 2, axis=1, keepdims=True) + np.sum(X_train ** 2, axis=1) - 2 * X.dot(X_train.T))
    return dists


def two_layer_net_loss(X, params, y, reg=0.0):
    W1, b1 = params["W1"], params["b1"]
    W2, b2 = params["W2"], params["b2"]
    N, D = X.shape
    h1 = np.maximum(0, X.dot(W1) + b1)
    scores = h1.dot(W2) + b2
    scores -= scores.max(axis=1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=1, keepdims=True)
    loss = -np.log(probs[np.arange(N), y]).sum() / N + reg * (np.sum(W1 * W1) + np.sum(W2 * W2))
    grads = {}
    dscores = probs.copy()
    dscores[np.arange(N), y] -= 1
    dscores /= N
    grads["W2"] = h1.T.dot(dscores) + 2 * reg * W2
    grads["b2"] = dscores.sum(axis=0)
    dh1 = dscores.dot(W2.T)
    dh1[h1 <= 0] = 0
    grads["W1"] = X.T.dot(dh1) + 2 * reg * W1
    grads["b1"] = dh1.sum(axis=0)
    return loss, grads


# ---- cases ---------------------------------------------------------------------------------------------


def _labels(rng, n, c):
    return rng.integers(0, c, size=n).astype(np.int32)


@case(CS, CASES)
def affine_forward_case(rng):
    def kernel(x, w, b):
        return affine_forward(x, w, b)[0]
    return Call(kernel, (f32(rng, 2, 3, 4), f32(rng, 12, 5), f32(rng, 5)))


@case(CS, CASES)
def affine_backward_case(rng):
    def kernel(dout, x, w, b):
        return affine_backward(dout, (x, w, b))
    return Call(kernel, (f32(rng, 2, 5), f32(rng, 2, 3, 4), f32(rng, 12, 5), f32(rng, 5)))


@case(CS, CASES)
def relu_forward_case(rng):
    return Call(relu_forward, (f32(rng, 4, 6),))


@case(CS, CASES)
def relu_backward_case(rng):
    return Call(relu_backward, (f32(rng, 4, 6), f32(rng, 4, 6)))


@case(CS, CASES)
def affine_relu_roundtrip(rng):
    def kernel(x, w, b, dout):
        out, cache = affine_relu_forward(x, w, b)
        return (out, *affine_relu_backward(dout, cache))
    return Call(kernel, (f32(rng, 4, 6), f32(rng, 6, 5), f32(rng, 5), f32(rng, 4, 5)))


@case(CS, CASES)
def svm_loss_case(rng):
    return Call(svm_loss, (f32(rng, 5, 4), _labels(rng, 5, 4)))


@case(CS, CASES)
def softmax_loss_case(rng):
    return Call(softmax_loss, (f32(rng, 5, 4), _labels(rng, 5, 4)))


@case(CS, CASES)
def batchnorm_train(rng):
    bn = {"mode": "train", "running_mean": np.zeros(6, np.float32), "running_var": np.ones(6, np.float32)}

    def kernel(x, gamma, beta, bn_param):
        return batchnorm_forward(x, gamma, beta, bn_param)[0]
    return Call(kernel, (f32(rng, 5, 6), f32(rng, 6), f32(rng, 6), bn))


@case(CS, CASES)
def batchnorm_train_first_call(rng):
    def kernel(x, gamma, beta, bn_param):
        return batchnorm_forward(x, gamma, beta, bn_param)[0]
    return Call(kernel, (f32(rng, 5, 6), f32(rng, 6), f32(rng, 6), {"mode": "train"}))


@case(CS, CASES)
def batchnorm_test_mode(rng):
    bn = {"mode": "test", "running_mean": f32(rng, 6), "running_var": np.abs(f32(rng, 6)) + 0.5}

    def kernel(x, gamma, beta, bn_param):
        return batchnorm_forward(x, gamma, beta, bn_param)[0]
    return Call(kernel, (f32(rng, 5, 6), f32(rng, 6), f32(rng, 6), bn))


@case(CS, CASES)
def batchnorm_backward_case(rng):
    def kernel(dout, x, gamma, beta):
        out, cache = batchnorm_forward(x, gamma, beta, {"mode": "train"})
        return batchnorm_backward_alt(dout, cache)
    return Call(kernel, (f32(rng, 5, 6), f32(rng, 5, 6), f32(rng, 6), f32(rng, 6)))


@case(CS, CASES)
def layernorm_case(rng):
    def kernel(x, gamma, beta):
        return layernorm_forward(x, gamma, beta, {})[0]
    return Call(kernel, (f32(rng, 4, 8), f32(rng, 8), f32(rng, 8)))


@case(CS, CASES)
def dropout_test_mode(rng):
    def kernel(x):
        return dropout_forward_test(x, {"p": 0.5, "mode": "test"})[0]
    return Call(kernel, (f32(rng, 4, 8),))


@case(CS, CASES)
def conv_naive(rng):
    def kernel(x, w, b):
        return conv_forward_naive(x, w, b, {"stride": 2, "pad": 1})[0]
    return Call(kernel, (f32(rng, 1, 2, 5, 5), f32(rng, 2, 2, 3, 3), f32(rng, 2)))


@case(CS, CASES)
def max_pool_naive(rng):
    def kernel(x):
        return max_pool_forward_naive(x, {"pool_height": 2, "pool_width": 2, "stride": 2})[0]
    return Call(kernel, (f32(rng, 2, 3, 4, 4),))


@case(CS, CASES)
def rnn_step(rng):
    def kernel(x, h, Wx, Wh, b):
        return rnn_step_forward(x, h, Wx, Wh, b)[0]
    return Call(kernel, (f32(rng, 3, 4), f32(rng, 3, 5), f32(rng, 4, 5), f32(rng, 5, 5), f32(rng, 5)))


@case(CS, CASES)
def rnn_step_back(rng):
    def kernel(dnext_h, x, h, Wx, Wh, b):
        next_h, cache = rnn_step_forward(x, h, Wx, Wh, b)
        return rnn_step_backward(dnext_h, cache)
    return Call(kernel, (f32(rng, 3, 5), f32(rng, 3, 4), f32(rng, 3, 5), f32(rng, 4, 5), f32(rng, 5, 5), f32(rng, 5)))


@case(CS, CASES)
def rnn_forward_case(rng):
    def kernel(x, h0, Wx, Wh, b):
        return rnn_forward(x, h0, Wx, Wh, b)[0]
    return Call(kernel, (f32(rng, 2, 3, 4), f32(rng, 2, 5), f32(rng, 4, 5), f32(rng, 5, 5), f32(rng, 5)))


@case(CS, CASES)
def word_embedding(rng):
    def kernel(x, W):
        return word_embedding_forward(x, W)[0]
    return Call(kernel, (rng.integers(0, 7, size=(2, 3)).astype(np.int32), f32(rng, 7, 4)))


@case(CS, CASES)
def word_embedding_back(rng):
    def kernel(dout, x, W):
        return word_embedding_backward(dout, (x, W))
    return Call(kernel, (f32(rng, 2, 3, 4), rng.integers(0, 7, size=(2, 3)).astype(np.int32), f32(rng, 7, 4)))


@case(CS, CASES)
def stable_sigmoid(rng):
    return Call(sigmoid, (f32(rng, 4, 6, scale=3.0),))


@case(CS, CASES)
def lstm_step(rng):
    def kernel(x, h, c, Wx, Wh, b):
        nh, nc, _ = lstm_step_forward(x, h, c, Wx, Wh, b)
        return nh, nc
    return Call(kernel, (f32(rng, 3, 4), f32(rng, 3, 5), f32(rng, 3, 5), f32(rng, 4, 20), f32(rng, 5, 20), f32(rng, 20)))


@case(CS, CASES)
def temporal_affine(rng):
    def kernel(x, w, b):
        return temporal_affine_forward(x, w, b)[0]
    return Call(kernel, (f32(rng, 2, 3, 4), f32(rng, 4, 5), f32(rng, 5)))


@case(CS, CASES)
def temporal_softmax(rng):
    mask = rng.random((2, 3)) > 0.3
    return Call(temporal_softmax_loss, (f32(rng, 2, 3, 5), rng.integers(0, 5, size=(2, 3)).astype(np.int32), mask))


@case(CS, CASES)
def sgd_momentum_step(rng):
    return Call(sgd_momentum, (f32(rng, 4, 5), f32(rng, 4, 5), {"learning_rate": 0.1}))


@case(CS, CASES)
def adam_step(rng):
    return Call(adam, (f32(rng, 4, 5), f32(rng, 4, 5), {}))


@case(CS, CASES)
def rmsprop_step(rng):
    return Call(rmsprop, (f32(rng, 4, 5), f32(rng, 4, 5), {}))


@case(CS, CASES)
def svm_vectorized(rng):
    return Call(linear_svm_vectorized, (f32(rng, 6, 4, scale=0.1), f32(rng, 5, 6), _labels(rng, 5, 4), 0.1))


@case(CS, CASES)
def softmax_vectorized(rng):
    return Call(softmax_loss_vectorized, (f32(rng, 6, 4, scale=0.1), f32(rng, 5, 6), _labels(rng, 5, 4), 0.1))


@case(CS, CASES)
def knn_no_loops(rng):
    return Call(knn_compute_distances_no_loops, (f32(rng, 3, 6), f32(rng, 5, 6)))


@case(CS, CASES)
def two_layer_net(rng):
    params = {"W1": f32(rng, 6, 8, scale=0.1), "b1": f32(rng, 8), "W2": f32(rng, 8, 3, scale=0.1), "b2": f32(rng, 3)}
    return Call(two_layer_net_loss, (f32(rng, 5, 6), params, _labels(rng, 5, 3), 0.05))
