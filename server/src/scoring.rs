//! Churn and conversion scores of a customer from its graph neighbourhood.
