//! ECS resource tags: Tag/Untag/ListTagsForResource on clusters, services, task
//! definitions and tasks.

use super::*;

impl EcsState {
    // ---- tags ------------------------------------------------------------------------

    fn resource_exists(&self, arn: &str) -> bool {
        if self.tags.contains_key(arn) {
            return true;
        }
        self.clusters.values().any(|c| c.arn == arn)
    }

    pub(super) fn tag_resource(&mut self, input: &Value) -> Result<Value, ApiError> {
        let arn = req_str(input, "resourceArn")?.to_string();
        if !self.resource_exists(&arn) {
            return Err(ApiError::bad(
                "ResourceNotFoundException",
                "The specified resource could not be found.",
            ));
        }
        let tags = parse_tags(input)?;
        merge_tags(self.tags.entry(arn).or_default(), tags);
        Ok(json!({}))
    }

    pub(super) fn untag_resource(&mut self, input: &Value) -> Result<Value, ApiError> {
        let arn = req_str(input, "resourceArn")?.to_string();
        if !self.resource_exists(&arn) {
            return Err(ApiError::bad(
                "ResourceNotFoundException",
                "The specified resource could not be found.",
            ));
        }
        let keys = str_list(input, "tagKeys");
        if let Some(tags) = self.tags.get_mut(&arn) {
            tags.retain(|(k, _)| !keys.contains(k));
        }
        Ok(json!({}))
    }

    pub(super) fn list_tags_for_resource(&mut self, input: &Value) -> Result<Value, ApiError> {
        let arn = req_str(input, "resourceArn")?;
        // ListTagsForResource does not model ResourceNotFoundException (Tag/Untag do).
        if !self.resource_exists(arn) {
            return Err(ApiError::bad(
                "InvalidParameterException",
                "The specified resource could not be found.",
            ));
        }
        let tags = self.tags.get(arn).map(Vec::as_slice).unwrap_or(&[]);
        Ok(json!({ "tags": tags_json(tags) }))
    }
}
