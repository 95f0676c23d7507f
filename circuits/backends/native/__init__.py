"""Native (C) kernels compiled at run time; see `build` and `kernels`."""
