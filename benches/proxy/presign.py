#!/usr/bin/env python3
"""Print a SigV4 presigned URL: presign.py METHOD ENDPOINT BUCKET KEY (keys from FERRY_*)."""
import os
import sys

import botocore.session
from botocore.config import Config

method, endpoint, bucket, key = sys.argv[1:5]
session = botocore.session.get_session()
client = session.create_client(
    "s3",
    region_name="us-east-1",
    endpoint_url=endpoint,
    aws_access_key_id=os.environ["FERRY_ACCESS_KEY"],
    aws_secret_access_key=os.environ["FERRY_SECRET_KEY"],
    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
)
op = {"GET": "get_object", "PUT": "put_object"}[method]
print(client.generate_presigned_url(op, Params={"Bucket": bucket, "Key": key}, ExpiresIn=86400))
