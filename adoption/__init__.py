"""pytest-kerasperf adopted in keras-team/keras: the pull request's files and the script.

``adoption/keras/`` holds the files the pull request adds, laid out as in a
Keras checkout; ``adoption/apply.py`` adds them to a checkout and runs Keras's
own commands on it (docs/keras-adoption.md).
"""
