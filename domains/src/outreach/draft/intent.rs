//! What the message is for (the intent, recognised by keywords) and where it goes.

/// What the message is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    FollowUp,
    Pricing,
    Demo,
    Renewal,
    WinBack,
    Onboarding,
    Generic,
}

impl Intent {
    pub const ALL: [Intent; 7] = [
        Intent::FollowUp,
        Intent::Pricing,
        Intent::Demo,
        Intent::Renewal,
        Intent::WinBack,
        Intent::Onboarding,
        Intent::Generic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Intent::FollowUp => "follow_up",
            Intent::Pricing => "pricing",
            Intent::Demo => "demo",
            Intent::Renewal => "renewal",
            Intent::WinBack => "win_back",
            Intent::Onboarding => "onboarding",
            Intent::Generic => "generic",
        }
    }

    /// The intent a free text names, by keywords; the order settles overlaps ("follow up on
    /// pricing" is about pricing, "renewal pricing" about the renewal).
    pub fn recognise(text: &str) -> Intent {
        let t = text.to_lowercase();
        let any = |words: &[&str]| words.iter().any(|w| t.contains(w));
        if any(&[
            "win back",
            "win-back",
            "winback",
            "re-engage",
            "reengage",
            "reactivat",
            "lapsed",
            "dormant",
            "churn",
            "come back",
            "inactive",
        ]) {
            Intent::WinBack
        } else if any(&["renew", "contract end", "expir"]) {
            Intent::Renewal
        } else if any(&[
            "onboard",
            "trial",
            "getting started",
            "get started",
            "welcome",
            "set up",
            "setup",
            "activat",
            "download",
            "install",
        ]) {
            Intent::Onboarding
        } else if any(&[
            "pricing", "price", "quote", "cost", "plan", "discount", "upgrade",
        ]) {
            Intent::Pricing
        } else if any(&[
            "demo",
            "walkthrough",
            "walk-through",
            "meeting",
            "book a call",
        ]) {
            Intent::Demo
        } else if any(&[
            "follow",
            "check in",
            "checking in",
            "check-in",
            "touch base",
            "recap",
            "nudge",
        ]) {
            Intent::FollowUp
        } else {
            Intent::Generic
        }
    }
}

/// Where the message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Email,
    Sms,
    Linkedin,
}

impl Channel {
    pub const ALL: [Channel; 3] = [Channel::Email, Channel::Sms, Channel::Linkedin];

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Email => "email",
            Channel::Sms => "sms",
            Channel::Linkedin => "linkedin",
        }
    }

    pub fn parse(s: &str) -> Option<Channel> {
        Channel::ALL
            .into_iter()
            .find(|c| c.as_str() == s.trim().to_ascii_lowercase())
    }
}
