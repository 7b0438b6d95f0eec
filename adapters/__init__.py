"""Label Studio labeling configs and exports -> the common annotation model."""
