//! Trained logistic models: fitting with `linfa-logistic` on standardised features with L2
//! regularisation, scoring with signed contributions, the evaluation metrics (AUC, Brier),
//! and the versioned model records of the store.

use linfa::prelude::*;
use linfa_logistic::LogisticRegression;
use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};
use svc_engine::Record;

use super::model::Score;
use super::vector;
use super::Features;

/// L2 penalty: linfa minimises sum(log-loss) + alpha/2 |w|^2, so 1.0 weighs like one example
/// and shrinks only what the data barely supports.
pub const L2_ALPHA: f64 = 1.0;
/// Optimiser iterations (L-BFGS converges in a few dozen on standardised inputs).
pub const MAX_ITERATIONS: u64 = 200;
/// Fewest examples of each class a model is fitted on; below it the score stays on its prior.
pub const MIN_PER_CLASS: usize = 20;

/// One fitted logistic model: P = sigmoid(intercept + sum(w_i * (x_i - mean_i) / scale_i)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fitted {
    /// Feature names, in the order of `weights`, `means` and `scales`.
    pub features: Vec<String>,
    pub intercept: f64,
    pub weights: Vec<f64>,
    pub means: Vec<f64>,
    pub scales: Vec<f64>,
    /// Examples it was fitted on, and how many were positive.
    pub trained_on: usize,
    pub positives: usize,
    /// In-sample AUC and Brier score (the held-out figures are the evaluation's).
    pub train_auc: f64,
    pub train_brier: f64,
}

/// Why a model could not be fitted (the score stays on its prior).
#[derive(Clone, Debug, PartialEq)]
pub enum NotFitted {
    TooFewLabels { positives: usize, negatives: usize },
    Solver(String),
}

impl std::fmt::Display for NotFitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotFitted::TooFewLabels {
                positives,
                negatives,
            } => write!(
                f,
                "{positives} positive and {negatives} negative examples; at least \
                 {MIN_PER_CLASS} of each are needed"
            ),
            NotFitted::Solver(e) => write!(f, "the solver failed: {e}"),
        }
    }
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

impl Fitted {
    /// Fits rows `xs` (columns named `features`) to labels `ys`.
    pub fn fit(features: &[String], xs: &[Vec<f64>], ys: &[bool]) -> Result<Fitted, NotFitted> {
        let positives = ys.iter().filter(|y| **y).count();
        let negatives = ys.len() - positives;
        if positives < MIN_PER_CLASS || negatives < MIN_PER_CLASS {
            return Err(NotFitted::TooFewLabels {
                positives,
                negatives,
            });
        }
        let cols = features.len();
        let n = xs.len() as f64;
        let means: Vec<f64> = (0..cols)
            .map(|j| xs.iter().map(|r| r[j]).sum::<f64>() / n)
            .collect();
        // A constant column gets scale 1 (its standardised value is 0 everywhere).
        let scales: Vec<f64> = (0..cols)
            .map(|j| {
                let var = xs.iter().map(|r| (r[j] - means[j]).powi(2)).sum::<f64>() / n;
                if var > 1e-12 {
                    var.sqrt()
                } else {
                    1.0
                }
            })
            .collect();
        let standard = |r: &Vec<f64>| -> Vec<f64> {
            (0..cols).map(|j| (r[j] - means[j]) / scales[j]).collect()
        };
        let flat: Vec<f64> = xs.iter().flat_map(standard).collect();
        let records = Array2::from_shape_vec((xs.len(), cols), flat)
            .map_err(|e| NotFitted::Solver(e.to_string()))?;
        let targets: Array1<usize> = ys.iter().map(|y| usize::from(*y)).collect();
        let fitted = LogisticRegression::default()
            .alpha(L2_ALPHA)
            .max_iterations(MAX_ITERATIONS)
            .fit(&Dataset::new(records, targets))
            .map_err(|e| NotFitted::Solver(e.to_string()))?;
        // linfa's positive class is the larger one; turn the model around when that is 0.
        let sign = if fitted.labels().pos.class == 1 {
            1.0
        } else {
            -1.0
        };
        let mut model = Fitted {
            features: features.to_vec(),
            intercept: sign * fitted.intercept(),
            weights: fitted.params().iter().map(|w| sign * w).collect(),
            means,
            scales,
            trained_on: ys.len(),
            positives,
            train_auc: 0.0,
            train_brier: 0.0,
        };
        let ps: Vec<f64> = xs.iter().map(|r| model.probability(r)).collect();
        model.train_auc = auc(&ps, ys);
        model.train_brier = brier(&ps, ys);
        Ok(model)
    }

    /// The contributions (log-odds) of each input of row `x`.
    fn contributions<'a>(&'a self, x: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
        self.weights
            .iter()
            .zip(&self.means)
            .zip(&self.scales)
            .zip(x)
            .map(|(((w, m), s), v)| w * (v - m) / s)
    }

    /// The probability for a row in this model's feature order.
    pub fn probability(&self, x: &[f64]) -> f64 {
        sigmoid(self.intercept + self.contributions(x).sum::<f64>())
    }

    /// This model's input row for `f` (features it does not know read as 0).
    pub fn row(&self, f: &Features) -> Vec<f64> {
        self.features
            .iter()
            .map(|n| vector::by_name(n).map_or(0.0, |d| (d.x)(f)))
            .collect()
    }

    /// The score of `f`: each factor's contribution is measured against the average customer
    /// of the training data (a factor at its average contributes 0).
    pub fn score(&self, f: &Features) -> Score {
        let x = self.row(f);
        let mut factors = Vec::new();
        for (name, c) in self.features.iter().zip(self.contributions(&x)) {
            if let Some(d) = vector::by_name(name) {
                if c.abs() > 1e-9 {
                    factors.push((d.name, (d.shown)(f), c));
                }
            }
        }
        factors.sort_by(|a, b| b.2.abs().total_cmp(&a.2.abs()).then(a.0.cmp(b.0)));
        Score {
            probability: self.probability(&x),
            factors,
        }
    }
}

/// Area under the ROC curve (the probability that a random positive outranks a random
/// negative; ties count half). 0.5 when a class is missing.
pub fn auc(scores: &[f64], labels: &[bool]) -> f64 {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|a, b| scores[*a].total_cmp(&scores[*b]));
    // Mann-Whitney U with average ranks over ties.
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        let avg_rank = (i + j) as f64 / 2.0 + 1.0;
        for k in &idx[i..=j] {
            if labels[*k] {
                rank_sum_pos += avg_rank;
            }
        }
        i = j + 1;
    }
    let pos = labels.iter().filter(|l| **l).count() as f64;
    let neg = labels.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 {
        return 0.5;
    }
    (rank_sum_pos - pos * (pos + 1.0) / 2.0) / (pos * neg)
}

/// Brier score: the mean squared error of the probabilities (0 is perfect; always answering
/// the base rate p scores p(1 - p)).
pub fn brier(probabilities: &[f64], labels: &[bool]) -> f64 {
    if labels.is_empty() {
        return 0.0;
    }
    probabilities
        .iter()
        .zip(labels)
        .map(|(p, y)| (p - f64::from(u8::from(*y))).powi(2))
        .sum::<f64>()
        / labels.len() as f64
}

/// One training run of a workspace: both models (or why a score stays on its prior), kept as
/// a versioned record (`score_model`, id = zero-padded sequence number, so scans are ordered).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreModel {
    pub seq: u64,
    /// `lr-v<seq>`.
    pub version: String,
    pub trained_at: String,
    /// Features as of this instant, labels from [cutoff, cutoff + horizon).
    pub cutoff: String,
    pub horizon_days: u32,
    /// Customers with a label (seen before the cutoff).
    pub labelled: usize,
    /// Touchpoints of the workspace when trained (the background job's growth check).
    pub touchpoints: u64,
    pub churn: Option<Fitted>,
    pub conversion: Option<Fitted>,
    /// Why a score stayed on its prior, per score.
    pub notes: Vec<String>,
}

impl Record for ScoreModel {
    const KIND: &'static str = "score_model";
    fn id(&self) -> String {
        format!("{:010}", self.seq)
    }
}

/// The model invocations use: a copy of the latest [`ScoreModel`] under one fixed id, so a
/// score reads one record and a retrain publishes with one atomic put.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CurrentModel(pub ScoreModel);

impl Record for CurrentModel {
    const KIND: &'static str = "score_model_current";
    fn id(&self) -> String {
        "current".to_owned()
    }
}

pub fn version_of(seq: u64) -> String {
    format!("lr-v{seq}")
}
