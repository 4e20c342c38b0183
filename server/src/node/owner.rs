//! Who owns a bucket, and owners as S3 documents name them (`Owner` elements). A bucket
//! records its owner (the user who created it); one without (created before users existed)
//! belongs to the primary user.

use std::borrow::Cow;

use ferry_core::rt::Runtime;
use ferry_core::s3::xml::Owner;

use super::context::Cx;
use crate::store::BucketSettings;
use crate::users::User;

/// The canonical id of the owner of a bucket with `settings`.
pub(crate) fn owner_id<'s, R: Runtime>(cx: &'s Cx<'_, R>, settings: &'s BucketSettings) -> &'s str {
    settings
        .owner()
        .unwrap_or(&cx.users().primary().canonical_id)
}

/// `id` as an `Owner` element: with the display name of the user it is, if the node knows it.
pub(crate) fn owner_of<R: Runtime>(cx: &Cx<'_, R>, id: &str) -> Owner<'static> {
    Owner {
        id: Cow::Owned(id.to_owned()),
        display_name: cx
            .users()
            .by_canonical_id(id)
            .map(|u| Cow::Owned(u.display_name.clone())),
    }
}

/// `user` as an `Owner` element.
pub(crate) fn user_owner(user: &User) -> Owner<'static> {
    Owner {
        id: Cow::Owned(user.canonical_id.clone()),
        display_name: Some(Cow::Owned(user.display_name.clone())),
    }
}
