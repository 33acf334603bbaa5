/*
 * filesapi.h - the HTTP side of files (filesapi.c; the store is files.h): presigned upload
 * URLs and file metadata under /v1/files, and the signed upload and download URLs.
 */
#ifndef MCPQ_ING_FILESAPI_H
#define MCPQ_ING_FILESAPI_H

#include "files.h"
#include "req.h"

/* 1 when url is /v1/files/<something>/content (the signed upload and download URL). */
int ing_filesapi_is_content(const char *url);
/* POST /v1/files/presign-upload and GET /v1/files/{id} (authenticated as for /mcp). */
void ing_filesapi_route(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);
/* GET or HEAD of the signed download URL: resp is the file (200, resp->has_fd) or why not
 * (403, 404, 405, 503). */
void ing_filesapi_download(ing_req_t *req, const char *url, const char *method, ing_resp_t *resp);
/* PUT of the signed upload URL, called once the headers are in: 1 when the body is wanted
 * (req->upload set), else 0 with resp filled (403, 404, 409, 413, 400, 415, 503). */
int ing_filesapi_upload_begin(ing_req_t *req, const char *url, ing_resp_t *resp);
/* A piece of the body: 0, or -1 when the connection should be closed (far too much data
 * after a body without Content-Length). */
int ing_filesapi_upload_data(ing_req_t *req, const char *data, size_t n);
/* The body is complete: stores the file (201 with its metadata) or fills resp with why not. */
void ing_filesapi_upload_end(ing_req_t *req, ing_resp_t *resp);
/* Drops an upload (its temporary file too, unless it was stored); NULL does nothing. */
void ing_filesapi_upload_free(struct ing_upload *up);

#endif
