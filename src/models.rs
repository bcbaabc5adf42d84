//! The model registry: `provider/id` strings, built-in models, and the user's models.json.
