"""The NPU emulator. Imports nothing from pyasc."""
