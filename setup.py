"""Build configuration beyond setup.cfg: the optional compiled grading kernels.

``grading.metrics._kernels`` speeds up the hot loops of grading large submissions. It is
optional: where it cannot be compiled (no C compiler), the install goes on and grading uses
the NumPy code that computes the same results (see ``grading/metrics/native.py``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("grading.metrics._kernels", sources=["grading/metrics/_kernels.c"], optional=True),
    ]
)
