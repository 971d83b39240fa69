/* See identity.h. */
#include <stdlib.h>
#include <string.h>

#include "identity.h"

static char *dup(const char *s) {
  char *d;
  if (s == NULL) return NULL;
  if ((d = strdup(s)) == NULL) abort();
  return d;
}

static void add_scope(mcp_identity *id, const char *s, size_t n) {
  char *v;
  if (n == 0) return;
  for (int i = 0; i < id->nscopes; i++)
    if (strlen(id->scopes[i]) == n && memcmp(id->scopes[i], s, n) == 0) return;
  id->scopes = realloc(id->scopes, (size_t)(id->nscopes + 1) * sizeof *id->scopes);
  v = malloc(n + 1);
  if (id->scopes == NULL || v == NULL) abort();
  memcpy(v, s, n);
  v[n] = '\0';
  id->scopes[id->nscopes++] = v;
}

static void add_scopes(mcp_identity *id, json_t *v) {
  const char *s = json_string_value(v);
  if (s != NULL) {
    while (*s) {
      size_t n;
      s += strspn(s, " ");
      n = strcspn(s, " ");
      add_scope(id, s, n);
      s += n;
    }
    return;
  }
  for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
    if (json_is_string(json_array_get(v, i)))
      add_scope(id, json_string_value(json_array_get(v, i)), strlen(json_string_value(json_array_get(v, i))));
}

mcp_identity *mcp_identity_new(json_t *claims, const char *fallback_subject) {
  const char *sub = json_string_value(json_object_get(claims, "sub"));
  const char *client = json_string_value(json_object_get(claims, "client_id"));
  mcp_identity *id;
  if (sub == NULL || *sub == '\0') sub = fallback_subject;
  if (sub == NULL || *sub == '\0') {
    json_decref(claims);
    return NULL;
  }
  if ((id = calloc(1, sizeof *id)) == NULL) abort();
  id->refs = 1;
  id->subject = dup(sub);
  if (client == NULL) client = json_string_value(json_object_get(claims, "azp"));
  id->client_id = dup(client);
  add_scopes(id, json_object_get(claims, "scope"));
  add_scopes(id, json_object_get(claims, "scp"));
  id->exp = json_is_number(json_object_get(claims, "exp")) ? json_number_value(json_object_get(claims, "exp")) : 0;
  id->claims = claims;
  return id;
}

mcp_identity *mcp_identity_ref(mcp_identity *id) {
  if (id != NULL) id->refs++;
  return id;
}

void mcp_identity_unref(mcp_identity *id) {
  if (id == NULL || --id->refs > 0) return;
  for (int i = 0; i < id->nscopes; i++) free(id->scopes[i]);
  free(id->scopes);
  free(id->subject);
  free(id->client_id);
  json_decref(id->claims);
  free(id);
}

int mcp_identity_has(const mcp_identity *id, const char *scope) {
  for (int i = 0; id != NULL && i < id->nscopes; i++)
    if (strcmp(id->scopes[i], scope) == 0) return 1;
  return 0;
}

const char *mcp_identity_subject(const mcp_identity *id) { return id ? id->subject : NULL; }

int mcp_identity_same_subject(const mcp_identity *a, const mcp_identity *b) {
  if (a == NULL || b == NULL) return a == b;
  return strcmp(a->subject, b->subject) == 0;
}
