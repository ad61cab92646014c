/* A stand-in for the runtime's plan registry (runtime/include/mscclpp/plan_api.h), compiled by
 * test_plan_ctypes.py so the Python ctypes layer is exercised against real C calls: the structs
 * cross the boundary and the selector callback is called from C. It reads only the few plan keys
 * it reports, by string search; it is not a JSON parser. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mscclpp/plan_api.h"

#define MAX_PLANS 64
#define MAX_TAGS 8

typedef struct {
  char name[128], collective[32], protocol[16], source[512];
  char tagStore[MAX_TAGS][32];
  const char* tags[MAX_TAGS];
  int nTags, worldSize, inPlace;
  uint64_t minBytes, maxBytes;
} FakePlan;

static FakePlan plans[MAX_PLANS];
static int count = 0;
static mscclppPlanSelectorFn selector = NULL;
static void* selectorData = NULL;

static void setError(char* buf, size_t len, const char* msg) {
  if (buf && len) snprintf(buf, len, "%s", msg);
}

static void stringValue(const char* json, const char* key, char* out, size_t len) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  const char* at = strstr(json, pattern);
  out[0] = 0;
  if (!at) return;
  at += strlen(pattern);
  size_t i = 0;
  while (at[i] && at[i] != '"' && i + 1 < len) {
    out[i] = at[i];
    i++;
  }
  out[i] = 0;
}

static uint64_t numberValue(const char* json, const char* key, uint64_t fallback) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char* at = strstr(json, pattern);
  return at ? strtoull(at + strlen(pattern), NULL, 10) : fallback;
}

static int add(const char* json, const char* source, const char* const* tags, int nTags, char* err, size_t errLen) {
  if (count == MAX_PLANS) {
    setError(err, errLen, "full");
    return mscclppPlanInternalError;
  }
  FakePlan* p = &plans[count];
  memset(p, 0, sizeof *p);
  stringValue(json, "name", p->name, sizeof p->name);
  if (!p->name[0]) {
    setError(err, errLen, "no \"name\" in plan");
    return mscclppPlanInvalid;
  }
  for (int i = 0; i < count; i++)
    if (!strcmp(plans[i].name, p->name)) {
      setError(err, errLen, "duplicate plan name");
      return mscclppPlanDuplicate;
    }
  stringValue(json, "collective", p->collective, sizeof p->collective);
  stringValue(json, "protocol", p->protocol, sizeof p->protocol);
  p->inPlace = strstr(json, "\"inplace\":true") != NULL;
  p->minBytes = numberValue(json, "min_message_size", 0);
  p->maxBytes = numberValue(json, "max_message_size", UINT64_MAX);
  for (const char* at = json; (at = strstr(at, "\"threadblocks\"")); at++) p->worldSize++;
  /* the plan's own "tags" list (as the real registry merges it), then the caller's */
  const char* list = strstr(json, "\"tags\":[");
  if (list) {
    list += 8;
    while (*list == '"' && p->nTags < MAX_TAGS) {
      const char* end = strchr(list + 1, '"');
      if (!end) break;
      snprintf(p->tagStore[p->nTags], sizeof p->tagStore[0], "%.*s", (int)(end - list - 1), list + 1);
      p->nTags++;
      list = end + 1;
      if (*list == ',') list++;
    }
  }
  for (int i = 0; i < nTags && p->nTags < MAX_TAGS; i++) {
    int seen = 0;
    for (int j = 0; j < p->nTags; j++) seen |= !strcmp(p->tagStore[j], tags[i]);
    if (!seen) snprintf(p->tagStore[p->nTags++], sizeof p->tagStore[0], "%s", tags[i]);
  }
  for (int i = 0; i < p->nTags; i++) p->tags[i] = p->tagStore[i];
  snprintf(p->source, sizeof p->source, "%s", source);
  count++;
  return mscclppPlanOk;
}

int mscclppPlanRegisterFile(const char* path, const char* const* tags, int nTags, char* errBuf, size_t errLen) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    setError(errBuf, errLen, "cannot open the plan file");
    return mscclppPlanInvalid;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = malloc(size + 1);
  size_t got = fread(text, 1, size, f);
  text[got] = 0;
  fclose(f);
  int status = add(text, path, tags, nTags, errBuf, errLen);
  free(text);
  return status;
}

int mscclppPlanRegisterJson(const char* json, size_t len, const char* sourceName, const char* const* tags, int nTags,
                            char* errBuf, size_t errLen) {
  char* text = malloc(len + 1);
  memcpy(text, json, len);
  text[len] = 0;
  int status = add(text, sourceName, tags, nTags, errBuf, errLen);
  free(text);
  return status;
}

int mscclppPlanUnregister(const char* name, char* errBuf, size_t errLen) {
  for (int i = 0; i < count; i++)
    if (!strcmp(plans[i].name, name)) {
      memmove(&plans[i], &plans[i + 1], (count - i - 1) * sizeof plans[0]);
      count--;
      for (int j = 0; j < count; j++)
        for (int t = 0; t < plans[j].nTags; t++) plans[j].tags[t] = plans[j].tagStore[t];
      return mscclppPlanOk;
    }
  setError(errBuf, errLen, "no such plan");
  return mscclppPlanNotFound;
}

int mscclppPlanSetSelector(mscclppPlanSelectorFn fn, void* userData) {
  selector = fn;
  selectorData = userData;
  return mscclppPlanOk;
}

int mscclppPlanCount(void) { return count; }

static void fill(const FakePlan* p, mscclppPlanInfo* info) {
  info->name = p->name;
  info->collective = p->collective;
  info->protocol = p->protocol;
  info->worldSize = p->worldSize;
  info->inPlace = p->inPlace;
  info->root = -1;
  info->minMessageBytes = p->minBytes;
  info->maxMessageBytes = p->maxBytes;
  info->tags = p->tags;
  info->nTags = p->nTags;
  info->source = p->source;
}

int mscclppPlanGetInfo(int i, mscclppPlanInfo* info) {
  if (i < 0 || i >= count || !info) return mscclppPlanBadArgument;
  fill(&plans[i], info);
  return mscclppPlanOk;
}

int mscclppPlanSelect(const mscclppPlanRequest* request, char* nameBuf, size_t nameLen, char* reasonBuf,
                      size_t reasonLen) {
  mscclppPlanInfo candidates[MAX_PLANS];
  int owner[MAX_PLANS], n = 0;
  for (int i = 0; i < count; i++)
    if (!strcmp(plans[i].collective, request->collective) && plans[i].worldSize == request->worldSize) {
      fill(&plans[i], &candidates[n]);
      owner[n++] = i;
    }
  int chosen = n > 0 ? 0 : -1;
  if (selector && n > 0) {
    int answer = selector(candidates, n, request, selectorData);
    chosen = answer == -2 ? 0 : answer;
  }
  if (chosen < 0 || chosen >= n) {
    setError(nameBuf, nameLen, "");
    setError(reasonBuf, reasonLen, n ? "the selector chose no plan" : "no candidate");
    return 0;
  }
  setError(nameBuf, nameLen, plans[owner[chosen]].name);
  setError(reasonBuf, reasonLen, selector ? "chosen by the selector" : "default choice");
  return 1;
}

int mscclppPlanApiVersion(void) { return MSCCLPP_PLAN_API_VERSION; }
