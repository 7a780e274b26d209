//! What a customer search asks for ([`CustomerQuery`]), read from URL parameters and checked.

use serde::{Deserialize, Serialize};

use svc_core::error::{Error, Result};
use svc_core::vocabulary::prop;

/// Largest page.
pub const PAGE_MAX: usize = 500;
/// The page size when none is asked for (the API's historical 100).
pub const PAGE_DEFAULT: usize = 100;
/// Longest search text, in characters.
pub const QUERY_MAX: usize = 200;
/// Largest offset.
pub const OFFSET_MAX: usize = u32::MAX as usize;

/// The column a page is sorted by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CustomerSort {
    /// `lastSeen` (the default; most recent first unless ascending is asked for).
    #[default]
    LastSeen,
    Email,
    Name,
    Phone,
    /// The conversion score (`score`).
    Score,
    /// The churn score (`churnScore`).
    Churn,
}

impl CustomerSort {
    pub fn parse(s: &str) -> Option<CustomerSort> {
        Some(match s {
            "last_seen" | "lastSeen" => CustomerSort::LastSeen,
            "email" => CustomerSort::Email,
            "name" => CustomerSort::Name,
            "phone" => CustomerSort::Phone,
            "score" => CustomerSort::Score,
            "churn" | "churnScore" | "churn_score" => CustomerSort::Churn,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CustomerSort::LastSeen => "last_seen",
            CustomerSort::Email => "email",
            CustomerSort::Name => "name",
            CustomerSort::Phone => "phone",
            CustomerSort::Score => "score",
            CustomerSort::Churn => "churn",
        }
    }

    pub(super) fn property(self) -> &'static str {
        match self {
            CustomerSort::LastSeen => prop::LAST_SEEN,
            CustomerSort::Email => prop::EMAIL,
            CustomerSort::Name => prop::NAME,
            CustomerSort::Phone => prop::PHONE,
            CustomerSort::Score => prop::SCORE,
            CustomerSort::Churn => prop::CHURN_SCORE,
        }
    }
}

/// What to list. `Default` is the first page of every customer, most recently seen first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CustomerQuery {
    /// Case-insensitive text found in any string property (email, name, phone, external id,
    /// any trait), or a `cus_...` id; digits of a phone number match however it is written.
    pub q: String,
    pub sort: CustomerSort,
    /// Ascending instead of the default descending order. Customers without the sort value
    /// come last either way; ties go by id.
    pub ascending: bool,
    /// Lifecycle stage: the `lifecycle_stage` property, else the Stage the customer is AT_STAGE
    /// (the rule of the `lifecycle:<stage>` segments), compared case-insensitively.
    pub stage: Option<String>,
    /// Conversion score (`score`) range, inclusive; customers without one are left out.
    pub min_score: Option<f64>,
    pub max_score: Option<f64>,
    /// Churn score (`churnScore`) range, inclusive.
    pub min_churn: Option<f64>,
    pub max_churn: Option<f64>,
    /// Customers with a touchpoint attributed to this campaign (its `campaignId` or name).
    pub campaign: Option<String>,
    /// Only customers with this property (say `email` for an email action).
    pub has: Option<String>,
    pub offset: usize,
    /// Page size, 1..=[`PAGE_MAX`] (0 means [`PAGE_DEFAULT`]).
    pub limit: usize,
}

impl CustomerQuery {
    /// The query of URL parameters (the API's and the dashboard's): `q`, `sort` (see
    /// [`CustomerSort::parse`]), `order` (`asc` or `desc`; `dir` too), `stage`, `min_score`,
    /// `max_score`, `min_churn`, `max_churn`, `campaign`, `has`, `offset`, `limit`. An empty
    /// text filter counts as absent (an empty number or name is refused); unknown names are
    /// ignored; bad values are the client's fault.
    pub fn from_params<'p>(
        params: impl IntoIterator<Item = (&'p str, &'p str)>,
    ) -> Result<CustomerQuery> {
        let mut q = CustomerQuery::default();
        for (name, value) in params {
            let value = value.trim();
            if value.is_empty() && matches!(name, "q" | "stage" | "campaign" | "has") {
                continue;
            }
            let number = |what: &str| {
                value
                    .parse::<f64>()
                    .ok()
                    .filter(|v| !v.is_nan())
                    .ok_or_else(|| Error::invalid_field(what, value, "a number"))
            };
            let count = |what: &str| {
                value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n <= OFFSET_MAX)
                    .ok_or_else(|| {
                        Error::invalid_field(
                            what,
                            value,
                            &format!("a whole number, 0 to {OFFSET_MAX}"),
                        )
                    })
            };
            match name {
                "q" => q.q = value.to_owned(),
                "sort" => {
                    q.sort = CustomerSort::parse(value).ok_or_else(|| {
                        Error::invalid_field(
                            "sort",
                            value,
                            "one of last_seen, email, name, phone, score, churn",
                        )
                    })?
                }
                "order" | "dir" => {
                    q.ascending = match value {
                        "asc" => true,
                        "desc" => false,
                        _ => return Err(Error::invalid_field(name, value, "asc or desc")),
                    }
                }
                "stage" => q.stage = Some(value.to_owned()),
                "campaign" => q.campaign = Some(value.to_owned()),
                "has" => q.has = Some(value.to_owned()),
                "min_score" => q.min_score = Some(number(name)?),
                "max_score" => q.max_score = Some(number(name)?),
                "min_churn" => q.min_churn = Some(number(name)?),
                "max_churn" => q.max_churn = Some(number(name)?),
                "offset" => q.offset = count(name)?,
                "limit" => {
                    q.limit = count(name)?;
                    if q.limit == 0 {
                        return Err(Error::invalid_field(
                            "limit",
                            value,
                            &format!("1 to {PAGE_MAX}"),
                        ));
                    }
                }
                _ => {}
            }
        }
        q.checked()
    }

    /// The query with its limits checked: a bad value is the client's fault.
    pub fn checked(mut self) -> Result<CustomerQuery> {
        self.q = self.q.trim().to_owned();
        if self.q.chars().count() > QUERY_MAX {
            return Err(Error::invalid_field(
                "q",
                &self.q.chars().take(40).collect::<String>(),
                &format!("at most {QUERY_MAX} bytes"),
            ));
        }
        if self.limit == 0 {
            self.limit = PAGE_DEFAULT;
        }
        if self.offset > OFFSET_MAX {
            return Err(Error::invalid_field(
                "offset",
                &self.offset.to_string(),
                &format!("at most {OFFSET_MAX}"),
            ));
        }
        if self.limit > PAGE_MAX {
            return Err(Error::invalid_field(
                "limit",
                &self.limit.to_string(),
                &format!("at most {PAGE_MAX}"),
            ));
        }
        for (name, v) in [
            ("min_score", self.min_score),
            ("max_score", self.max_score),
            ("min_churn", self.min_churn),
            ("max_churn", self.max_churn),
        ] {
            if v.is_some_and(f64::is_nan) {
                return Err(Error::invalid_field(name, "NaN", "a number"));
            }
        }
        self.stage = self
            .stage
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        self.campaign = self
            .campaign
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        self.has = self.has.filter(|s| !s.trim().is_empty());
        Ok(self)
    }
}
