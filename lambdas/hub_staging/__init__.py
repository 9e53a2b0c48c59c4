"""Custom::HubModelCopy: copies a Hugging Face Hub model revision into S3 once, reading the token at run time."""
