"""A team's program that needs a package the TensorFlow image lacks (tf-keras, Keras 2): it runs
only in an image built with it (make image NAME=tfk8s-keras REQUIREMENTS=.../requirements.txt)."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tf_keras  # noqa: E402

features = np.random.default_rng(0).normal(size=(512, 4)).astype("float32")
labels = (features.sum(axis=1) > 0).astype("float32")
model = tf_keras.Sequential([tf_keras.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
model.compile(optimizer=tf_keras.optimizers.SGD(0.5), loss="binary_crossentropy", metrics=["accuracy"])
history = model.fit(features, labels, epochs=20, verbose=0)
print(f"tf_keras {tf_keras.__version__}: accuracy {history.history['accuracy'][-1]:.2f}", flush=True)
sys.exit(0 if history.history["accuracy"][-1] > 0.8 else 1)
