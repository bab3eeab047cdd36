"""Configuration layer: parameter files and trees (:mod:`.params`) and scenarios
(:mod:`.scenario`: robot, initial state, inputs, prescribed motion, controller, references,
environment), parsed and checked once at load time.  Used by ``vm-sim``, both node cores and
the viewer; imports the core, model and sim layers."""
