-- wrk: PUT a 1 MiB body with SSE-S3 to the (presigned, PRESIGN_SSE=AES256) URL on the command line.
wrk.method = "PUT"
wrk.body = string.rep("f", 1048576)
wrk.headers["x-amz-server-side-encryption"] = "AES256"
