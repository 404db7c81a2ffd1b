"""Kept for programs written against it: TFExperiment lives in components/resources/tf_experiment.py."""

from .resources.tf_experiment import TFExperiment, TFExperimentArgs

__all__ = ["TFExperiment", "TFExperimentArgs"]
