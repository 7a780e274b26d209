//! `/api/v1/integrations`: connect, test and disconnect outside providers (JWT only).
