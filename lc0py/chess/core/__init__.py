"""Positions as uint64 words, compiled with numba: the board (legal moves, ``play``, keys), the
112-plane encoder, and text records (FEN/EPD lines, ``FEN | moves``) to planes and back to
policies. Shared by the search core, the public API and the bulk evaluator."""
