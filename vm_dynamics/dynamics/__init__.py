"""Dynamics layer: the closed-form Lagrange–Poincaré reference (:mod:`.lp`) and the O(n)
recursive algorithms with their backend seam (:mod:`.fast`).  Imports only the core layer; the
algorithms take any object with a model's attributes."""
