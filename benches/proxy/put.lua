-- wrk: PUT a 1 MiB body to the (presigned) URL on the command line.
wrk.method = "PUT"
wrk.body = string.rep("f", 1048576)
