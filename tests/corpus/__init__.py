"""A corpus of numpy code in the styles people publish (see harness.py), to measure what compiles unchanged.

Each module holds functions written the way their style writes them (a Keras-like numpy backend, a
scikit-learn-like MLP, CS231n-like layers, numpy Llama/RWKV, the nnfs book, ML-From-Scratch, a textbook
network) and a `CASES` list: how to call each one. The functions are never edited to suit pyasc.
"""
