// The REST verbs on resource paths, for whole (non-streaming) responses: get, list, create,
// update, patch, delete and deletecollection through the ApiFront, rendered as the client
// negotiated (object, Table, PartialObjectMetadata), and `kubectl logs` without follow. Watches
// and followed logs stream from the transport (server.cpp).
#pragma once

#include <optional>
#include <vector>

#include "localcluster/api_front.h"
#include "localcluster/content_negotiation.h"
#include "localcluster/http_message.h"
#include "localcluster/pod_logs.h"
#include "localcluster/routing.h"
#include "localcluster/service_account_tokens.h"
#include "localcluster/store.h"
#include "localcluster/table.h"

namespace unitrain::localcluster {

class ResourceHandler {
 public:
  ResourceHandler(Store& store, ApiFront& front, PodLogs& logs) : store_(store), front_(front), logs_(logs) {}

  // Admission warnings become `Warning: 299 - "<text>"` headers, which kubectl prints.
  HttpReply handle(const HttpRequest& req, const ResourceRoute& route, const MediaType& content_type, bool apply);
  // A custom resource's printer columns (Table output); nullopt for built-in resources.
  std::optional<std::vector<PrinterColumn>> crd_columns(const ResourceInfo& r) const;

 private:
  HttpReply call(const HttpRequest& req, const ResourceRoute& route, const MediaType& content_type, bool apply,
                 CallNotes& notes);
  HttpReply patch(const HttpRequest& req, const ResourceRoute& route, const MediaType& content_type, bool apply,
                  CallNotes& notes);
  // The body's kind and apiVersion (with `type_meta`) and the fieldValidation directive for its
  // undeclared fields: an error to answer with, or nothing (warnings added to `notes`).
  std::optional<StatusError> check_body(const Query& q, const ResourceInfo& r, const json::Value& body,
                                        std::string_view name, std::string_view options_kind, bool type_meta,
                                        CallNotes& notes) const;
  // A store result (one object or a list) the way the client asked.
  HttpReply render(const ResourceInfo& r, const HttpRequest& req, unsigned status, const json::Value& v) const;
  HttpReply pod_log(const ResourceRoute& route, const Query& q);

  Store& store_;
  ApiFront& front_;
  PodLogs& logs_;
  ServiceAccountTokens tokens_;  // serviceaccounts/token and tokenreviews
};

}  // namespace unitrain::localcluster
