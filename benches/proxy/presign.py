#!/usr/bin/env python3
"""Print a SigV4 presigned URL: presign.py GET|PUT ENDPOINT BUCKET KEY (keys from FERRY_*);
presign.py CREATE ENDPOINT BUCKET creates the bucket instead. With PRESIGN_SSE=AES256 a PUT URL
signs `x-amz-server-side-encryption: AES256`, which the request must then carry."""
import os
import sys

import botocore.session
from botocore.config import Config

method, endpoint, bucket = sys.argv[1:4]
session = botocore.session.get_session()
client = session.create_client(
    "s3",
    region_name="us-east-1",
    endpoint_url=endpoint,
    aws_access_key_id=os.environ["FERRY_ACCESS_KEY"],
    aws_secret_access_key=os.environ["FERRY_SECRET_KEY"],
    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
)
if method == "CREATE":
    client.create_bucket(Bucket=bucket)
else:
    op = {"GET": "get_object", "PUT": "put_object"}[method]
    params = {"Bucket": bucket, "Key": sys.argv[4]}
    if method == "PUT" and os.environ.get("PRESIGN_SSE"):
        params["ServerSideEncryption"] = os.environ["PRESIGN_SSE"]
    print(client.generate_presigned_url(op, Params=params, ExpiresIn=86400))
